-- deleteLocks: compare-and-delete; removes our claim only if it still carries our nonce.
-- ARGV: 1 our field, 2 nonce, 3 release channel
-- With waiters queued, the release wakes them (the prelude's wake).
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
if may_have_waiters() then
  wake(scan(server_now(), false, nil, nil, nil), ARGV[3])
end
return 1
