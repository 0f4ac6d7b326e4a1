-- deleteLocks: compare-and-delete; removes our claim only if it still carries our nonce.
-- ARGV: 1 our field, 2 nonce, 3 release channel
-- With waiters queued, the release wakes them (the prelude's wake).
-- Reply: 1 deleted, 0 nothing of ours was there
local v = redis.call('HGET', key, ARGV[1])
if not v then
  return 0
end
local ts, exp, tok, ctr = parse(v)
if not is_nonce(ARGV[1], ctr, ARGV[1], ARGV[2]) then
  return 0
end
local t = tonumber(redis.call('HGET', key, 't')) or 0
if tok > t then
  -- the next grant's token is higher than ours; written first, so the hash is never emptied (the key keeps its TTL)
  redis.call('HSET', key, 't', fmt(tok))
end
redis.call('HDEL', key, ARGV[1])
if may_have_waiters() then
  wake(scan(server_now(), false, nil, nil, nil), ARGV[3])
end
return 1
