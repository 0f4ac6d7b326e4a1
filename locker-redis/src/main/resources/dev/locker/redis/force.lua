-- forceRelease: removes every claim (live or dead) and keeps the token field, so tokens keep increasing, and the
-- tombstones, so withdrawn requests still grant nothing.
-- With an expected token (ARGV 2), only the live claim that carries that token is removed, and the forced-release
-- record written in the same step, or nothing at all: a claim granted later carries a higher token and is never touched.
-- KEYS: 1 the lock's hash; with an expected token, 2 its records' hash (same hash tag, same Cluster slot)
-- ARGV: 1 release channel (waiters queued are woken); optional: 2 the expected token, 3 record name, 4 record value,
--       5 "1" for a resend of a call that may have reached the server already
-- Reply: how many claims there were (released ones, see the prelude, not counted); with an expected token, 1 when
-- that claim was removed (by this call, or, on a resend, by an earlier attempt of it: its record is there, byte for
-- byte), else 0
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
if ARGV[2] then
  local now = server_now()
  local all = redis.call('HGETALL', key)
  local last, found, foundTok = 0, nil, nil
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    if f == 't' then
      last = tonumber(v) or 0
    elseif string.byte(f, 1) == 99 and string.sub(v, 1, 4) ~= '0 0 ' then -- 'c', not a released claim
      local ts, exp, tok = parse(v)
      -- (below TOKEN_LIMIT only: fmt writes every token at or above it as 2^53, which no grant makes)
      if ts ~= nil and exp > now and tok < TOKEN_LIMIT and fmt(tok) == ARGV[2] then
        found, foundTok = f, tok
      end
    end
  end
  if not found then
    -- the resend of a call whose reply may have been lost (RedisLocker sends it again on a fresh connection, with ARGV
    -- 5): its earlier attempt removed the claim and wrote this very record (the forcing locker's rid, thread, instant,
    -- reason, the token), written only with the removal. A first attempt never takes it so: another call may write
    -- the same bytes (same locker, thread name, reason and millisecond)
    if ARGV[5] == '1' and redis.call('HGET', KEYS[2], ARGV[3]) == ARGV[4] then
      return 1
    end
    return 0
  end
  if foundTok > last then
    redis.call('HSET', key, 't', fmt(foundTok)) -- the next grant's token is higher than the forced claim's
  end
  redis.call('HDEL', key, found) -- after "t": the key keeps its TTL
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
  if may_have_waiters() then
    wake(scan(server_now(), false, nil, nil, nil), ARGV[1])
  end
  return 1
end
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
