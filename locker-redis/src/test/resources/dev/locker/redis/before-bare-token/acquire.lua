-- writeLock: write our claim and decide the holder in one step.
-- KEYS: 1 the lock's hash, 2 the admission marker (see admit in the prelude; single server only)
-- ARGV: 1 our field ("c" .. instance), 2 nonce, 3 expiry ms, 4 owner part of the claim (a reference into our owner
--       record, or "=" and the owner's bytes), 5 restart guard ms, 6 scrub ("1"/"0"),
--       7 eviction check ("fail", "warn" or "off"), 8 waiter id (absent or "" when this acquire does not wait), 9 queue
--       entry ms (how long a waiter's entry lives unless refreshed; only with a waiter id)
-- A waiter that is refused is queued (or its entry refreshed, keeping its place); while a live waiter is queued,
-- the lock is granted to none but the first of them (no barging: a releaser asking again queues behind them).
-- A live claim in our field with another nonce is another transaction's and holds the lock like any other; only a
-- repeat of this request (same nonce, after a lost reply) replaces the claim it wrote.
-- Reply: {1, token, written[, warning]}  granted: our claim is the holder (warning: the server may evict it)
--        {0, holder value, ms, holder field}  another live claim holds the lock, for at most ms more unless renewed;
--                             ours is not kept
--        {-5, owner part, queue field}  the lock is free but promised to the first waiter queued (the owner part of
--                             its entry, as in a claim, and its field "q" .. waiter name it)
--        {-2, ms left}        the server may have started less than the restart guard ago: nothing is granted yet
--        {-3}                 its client already gave up on this request and withdrew it: nothing is granted
--        {-4, policy, maxmemory}  the server may evict keys, ours included, and the check says fail
local own, expms, guard, check = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[5]), ARGV[7]
-- A grant whose token would not rise above the last one, or reach TOKEN_LIMIT (2^53, the prelude's), is refused with an
-- error, never made with a repeated or unreadable token. Only a field "t" that no script of ours wrote ("1e19",
-- "inf", "nan": an operator's HSET, another tool's restore) or a server clock that once read past the year 2255 gets
-- there; the lock then needs an operator (its key deleted: a forced release keeps the token field).
local TOKEN_ERROR = 'ERR the last fencing token of this lock (field t or a claim) is not below 2^53: no grant can '
    .. 'carry a higher one (a value no Locker script wrote, or a server clock once past the year 2255)'
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2] -- (TIME's digits: coerced without tonumber's call)
local all = redis.call('HGETALL', key)
local n = #all
-- The fast path takes a hash that holds nothing, or one field that only keeps the last token: field "t", or a released
-- claim (see the prelude: written "0 0 <token> <counter> ", dead to every script) in our field or, when we scrub, in
-- another's. last is that token; drop the field our claim replaces (it carries the token now), if not our own.
local last, drop = 0, nil
local fast = n == 0
if n == 2 then
  local f = all[1]
  if f == 't' then
    fast, last, drop = true, tonumber(all[2]) or 0, 't' -- (as scan reads it: unreadable counts as 0, nan as nan)
  elseif string.byte(f, 1) == 99 then -- 'c'
    local t, c = string.match(all[2], '^0 0 (%d+) (%x+) ')
    if t and #c <= 16 and (f == own or ARGV[6] == '1') then -- (parse reads a longer counter as no claim at all)
      fast, last = true, tonumber(t)
      if f ~= own then
        drop = f
      end
    end
  end
end
if fast then
  -- The fast path: the lock is free and nothing else is in its hash (no live claim, tombstone or queue entry), which
  -- is what the general path below would find with scan: nobody senior or queued, no withdrawal, at most the one
  -- field whose token it keeps (scrubbed, or overwritten when it is ours). It ends where the general path ends.
  local warning
  if guard > 0 or check ~= 'off' then
    -- admitted outright by a marker of this boot that says up long enough and no eviction (see admit); anything
    -- else (no marker, another boot's, Cluster mode, a warning or a refusal to give) is admit's to decide
    local marker, saved, ms, us = KEYS[2]
    if marker then
      saved = redis.pcall('LASTSAVE') -- a number, or an error reply (a table) that no marker matches
      marker = redis.pcall('GET', marker)
      if type(marker) == 'string' then
        ms, us = string.match(marker, '^(%d+) (%d+) 1$')
      end
    end
    if not (ms and ms + 0 == saved and (guard <= 0 or now - us >= guard * 1000)) then
      local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner,
          wake, may_have_waiters, is_senior, keep_until, admit = lib()
      local refusal
      refusal, warning = admit(now, guard, check)
      if refusal then
        return refusal
      end
    end
  end
  local tok, tokd = now, '0'
  if not (last < now) then -- the server's clock is at or behind the last token (it stepped back), or "t" is nan
    tok = last + 1
  end
  if not (tok > last and tok < TOKEN_LIMIT) then
    return redis.error_reply(TOKEN_ERROR)
  end
  if tok ~= now then
    tokd = string.format('%d', tok - now)
  end
  -- the claim's value as claim_value writes it (ARGV 3 is a whole number of ms, at least 0): written now (TIME's
  -- seconds and microseconds, as fmt(now) prints them), expiry expms later, the token's delta, the nonce's counter
  -- without leading zeros, the owner part
  local micros = time[2]
  if #micros < 6 then
    micros = string.sub('00000', #micros) .. micros
  end
  redis.call('HSET', key, own, time[1] .. micros .. ' ' .. string.format('%d', expms) .. ' ' .. tokd .. ' '
      .. (string.match(ARGV[2], '^0*(%x+)$', 17) or '0') .. ' ' .. ARGV[4])
  if drop then
    redis.call('HDEL', key, drop) -- our claim carries the last token now (one field fewer while the lock is held)
  end
  -- the safety net as keep_until sets it: the key lives one expiry (the grace) after our claim's. Needed at every
  -- grant, though the key may have a TTL already: that TTL was set for an earlier claim (or a waiter or tombstone, with
  -- their lockers' graces), nothing in the hash records how far it reaches, and reading it (PTTL) costs what
  -- setting it costs; a key that lapsed under a live claim would let a second holder in.
  redis.call('PEXPIRE', key, string.format('%d', 2 * expms + 1))
  return { 1, tok, now, warning }
end
-- the general path: the hash holds a claim, a tombstone or a queue entry (its HGETALL reply is reused)
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit = lib()
local waiter = ARGV[8] ~= '' and ARGV[8] or nil
local s = scan(now, ARGV[6] == '1', own, ARGV[2], waiter, all)
local _, counter = split_nonce(ARGV[2])
if s.withdrawn and counter and counter <= s.withdrawn then
  -- a late request (fixed-width hex counters compare as strings): its client no longer waits for the answer
  if s.own then
    -- a repeat of a request whose first attempt was granted: never leave that grant behind
    keep_token(s, select(3, parse(s.own)))
    redis.call('HDEL', key, own)
  end
  return { -3 }
end
if s.senior or (s.head and s.head ~= (waiter and ('q' .. waiter)) and not s.own) then
  if s.own then
    -- this very claim, from an earlier attempt of this request: never leave a losing claim behind
    keep_token(s, select(3, parse(s.own)))
    redis.call('HDEL', key, own)
  end
  if waiter then
    local untl = enqueue(s, waiter, now, tonumber(ARGV[9]), ARGV[4])
    keep_until(math.max(untl, s.maxexp, s.keep), now, expms)
  end
  if s.senior then
    local _, sexp = parse(s.seniorValue)
    return { 0, s.seniorValue, math.floor((sexp - now) / 1000) + 1, s.senior }
  end
  return { -5, queued_owner(s.headValue), s.head }
end
local refusal, warning = admit(now, guard, ARGV[7])
if refusal then
  return refusal
end
local tok = math.max(s.last + 1, now)
if not (tok > s.last and tok < TOKEN_LIMIT) then
  return redis.error_reply(TOKEN_ERROR)
end
local exp = now + expms * 1000
redis.call('HSET', key, own, claim_value(now, exp, tok, string.sub(ARGV[2], 17), ARGV[4]))
if s.hasT then
  redis.call('HDEL', key, 't') -- our claim carries the last token now (one field fewer while the lock is held)
end
if s.mine then
  redis.call('HDEL', key, 'q' .. waiter) -- served
  if s.waiting <= 1 then
    redis.call('HDEL', key, 'n')
  end
end
keep_until(math.max(exp, s.maxexp, s.keep), now, expms)
return { 1, tok, now, warning }
