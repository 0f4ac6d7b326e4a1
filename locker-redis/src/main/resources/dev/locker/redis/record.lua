-- record: reads or writes a record kept with a lock (a finished run's), in a hash of its own (KEYS[2]) that no
-- claim's expiry, release or forced release touches; same hash tag, so the same Cluster slot as the lock's hash.
-- KEYS: 1 the lock's hash, 2 its records' hash
-- ARGV: 1 'r', 'w' or 'f', 2 record name; for 'w' and 'f': 3 value; for 'w': 4 our field, 5 nonce, 6 our token
-- Reply: 'r': the value, or false when there is none
--        'w': 1 written, 0 our claim no longer holds the lock (nothing written); 'f' (an operator's record): 1
local name = ARGV[2]
if ARGV[1] == 'r' then
  return redis.call('HGET', KEYS[2], name)
end
if ARGV[1] == 'f' then
  redis.call('HSET', KEYS[2], name, ARGV[3])
  return 1
end
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local now = server_now()
local v = redis.call('HGET', key, ARGV[4])
if not v then
  return 0
end
local _, exp, tok, ctr = parse(v)
if exp == nil or not is_nonce(ctr, ARGV[5]) or exp <= now or fmt(tok) ~= ARGV[6] then
  return 0
end
redis.call('HSET', KEYS[2], name, ARGV[3])
return 1
