-- forceRelease: removes every claim (live or dead) and keeps the token field, so tokens keep increasing, and the
-- tombstones, so withdrawn requests still grant nothing.
-- ARGV: 1 release channel (waiters queued are woken)
-- Reply: how many claims there were (released ones, see the prelude, not counted)
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit = lib()
local n = 0
local all = redis.call('HGETALL', key)
local last, top, claims = 0, 0, {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == 't' then
    last = tonumber(v) or 0
  elseif string.byte(f, 1) == 99 then -- 'c'
    claims[#claims + 1] = f
    if string.sub(v, 1, 4) ~= '0 0 ' then -- (a released claim is no claim its release left behind)
      n = n + 1
    end
    local _, _, tok = parse(v)
    if tok and tok > top then
      top = tok
    end
  end
end
if top > last then
  redis.call('HSET', key, 't', fmt(top)) -- the next grant's token is higher than any forced claim's
end
if #claims > 0 then
  redis.call('HDEL', key, unpack(claims)) -- after "t": the key keeps its TTL
end
if may_have_waiters() then
  wake(scan(server_now(), false, nil, nil, nil), ARGV[1])
end
return n
