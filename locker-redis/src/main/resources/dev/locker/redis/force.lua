-- forceRelease: removes every claim (live or dead) and keeps the token field, so tokens keep increasing, and the
-- tombstones, so withdrawn requests still grant nothing.
-- ARGV: 1 release channel (waiters queued are woken)
-- Reply: how many claims there were
local n = 0
for _, f in ipairs(redis.call('HKEYS', key)) do
  if string.byte(f, 1) == 99 then -- 'c'
    redis.call('HDEL', key, f)
    n = n + 1
  end
end
if may_have_waiters() then
  wake(scan(server_now(), false, nil, nil, nil), ARGV[1])
end
return n
