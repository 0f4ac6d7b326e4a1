-- deleteLocks: compare-and-delete; removes our claim only if it still carries our nonce.
-- ARGV: 1 our field, 2 nonce, 3 release channel
-- With waiters queued, the release wakes them (the prelude's wake).
-- Reply: 1 deleted, 0 nothing of ours was there
-- one read (HGETALL: the least-privilege ACL has no HMGET): our claim, the token field, the queue's counter
local all = redis.call('HGETALL', key)
local got = {}
for i = 1, #all, 2 do
  local f = all[i]
  if f == ARGV[1] then
    got[1] = all[i + 1]
  elseif f == 't' then
    got[2] = all[i + 1]
  elseif f == 'n' then
    got[3] = true
  end
end
local v = got[1]
if not v then
  return 0
end
local ts, exp, tok, ctr = parse(v)
if not is_nonce(ctr, ARGV[2]) then
  return 0
end
local t = tonumber(got[2]) or 0
if tok > t then
  -- the next grant's token is higher than ours; written first, so the hash is never emptied (the key keeps its TTL)
  redis.call('HSET', key, 't', fmt(tok))
end
redis.call('HDEL', key, ARGV[1])
if got[3] then -- some waiter may be queued
  wake(scan(server_now(), false, nil, nil, nil), ARGV[3])
end
return 1
