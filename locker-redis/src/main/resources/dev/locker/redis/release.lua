-- deleteLocks: compare-and-delete; removes our claim only if it still carries our nonce.
-- ARGV: 1 our field, 2 nonce
-- Reply: 1 deleted, 0 nothing of ours was there
local v = redis.call('HGET', key, ARGV[1])
if not v then
  return 0
end
local ts, exp, tok, nonce = parse(v)
if nonce ~= ARGV[2] then
  return 0
end
redis.call('HDEL', key, ARGV[1])
return 1
