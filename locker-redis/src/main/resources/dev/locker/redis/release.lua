-- deleteLocks: compare-and-delete; ends our claim only if it still carries our nonce: left released in place (see the
-- prelude) when it is alone in the hash, else removed with its token kept in field "t".
-- ARGV: 1 our field, 2 nonce, 3 release channel; or, from a client that knows the claim's token (RedisLocker, nearly
--       always), four: 1 our field, 2 release channel, 3 how our claim's value starts if it is as granted and not
--       renewed, "<token> <expiry ms> 0 <counter> " (its token its written time, as at nearly every grant), 4 the
--       released claim it then becomes, "0 0 <token> <counter> ". The nonce is then our field's instance and that
--       counter: one argument fewer, since each one costs the server a string and, at 1, 2, 3 and 5, a table resize.
--       The fast path trusts ARGV 3 and 4 as RedisDriver makes them (nonempty, our claim's own token and counter):
--       it compares and writes them as they stand, as a script trusts every argument its own client computes.
-- With waiters queued, the release wakes them (the prelude's wake).
-- Reply: 1 ended (also when a repeat finds it released already: the reply of a release that was lost), 0 nothing of
--        ours was there
-- one read (HGETALL: the least-privilege ACL has no HMGET): our claim, the token field, the queue's counter
local all = redis.call('HGETALL', key)
local nonce, channel = ARGV[2], ARGV[3]
if ARGV[4] then
  if #all == 2 and all[1] == ARGV[1] and string.find(all[2], ARGV[3], 1, true) == 1 then
    -- Our claim exactly as granted: its counter is ours, so it is ours, and its token is the one we pass. Found by
    -- one plain find instead of two pattern matches; its released value is the one the slower path below would write.
    redis.call('HSET', key, ARGV[1], ARGV[4])
    return 1
  end
  -- the nonce, made again for the slower paths: our field's instance, then the counter in 16 hex digits
  local c = string.match(ARGV[4], '(%x+) $') or ''
  nonce, channel = string.sub(ARGV[1], 2) .. string.rep('0', 16 - #c) .. c, ARGV[2]
end
nonce = nonce or ''
if #all == 2 and all[1] == ARGV[1] and #nonce == 32 then
  local v = all[2]
  -- The fast path: our field alone (no "t", so no token to compare with; no "n", so nobody to wake), holding a
  -- claim of the current layout with our nonce: its counter is the nonce's 16 hex digits without leading zeros,
  -- which is what parse and is_nonce accept (they pad it back). Anything else goes the general way.
  local ts, tokd, ctr = string.match(v, '^(%d+) %d+ (%d+) (%x+) ')
  if ctr and ctr == string.match(nonce, '^0*(%x+)$', 17) then
    -- the token is ts + tokd; mostly tokd is 0 and the token is ts's digits as they stand (a leading 0 aside)
    local tok = ts
    if tokd ~= '0' or ts < '1' then
      tok = ts + tokd
      tok = tok > 0 and string.format('%d', math.min(TOKEN_LIMIT, tok)) -- as the prelude's fmt
    end
    if tok then
      -- our claim becomes a released one in place (see the prelude): one write instead of keeping the token in
      -- field "t" and deleting our field, and the hash is never emptied (the key keeps its TTL)
      redis.call('HSET', key, ARGV[1], '0 0 ' .. tok .. ' ' .. ctr .. ' ')
    else
      redis.call('HDEL', key, ARGV[1]) -- a token of 0 or less: nothing to keep
    end
    return 1
  end
end
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
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local ts, exp, tok, ctr = parse(v)
if not is_nonce(ctr, nonce) then
  return 0
end
local t = tonumber(got[2]) or 0
if tok > t then
  -- the next grant's token is higher than ours; written first, so the hash is never emptied (the key keeps its TTL)
  redis.call('HSET', key, 't', fmt(tok))
end
redis.call('HDEL', key, ARGV[1])
if got[3] then -- some waiter may be queued
  wake(scan(server_now(), false, nil, nil, nil), channel)
end
return 1
