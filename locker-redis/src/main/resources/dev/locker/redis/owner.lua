-- owner: writes fields of a locker instance's owner record (see RedisOwners), and how long the record lives.
-- KEYS: 1 the record's hash ("<prefix>{}o" .. instance)
-- ARGV: 1 time to live ms, then field, value, field, value...
-- Reply: 1
-- Loaded without the prelude (see RedisScript.OWNER): its key is its own local.
local key = KEYS[1]
redis.call('HSET', key, unpack(ARGV, 2))
redis.call('PEXPIRE', key, ARGV[1])
return 1
