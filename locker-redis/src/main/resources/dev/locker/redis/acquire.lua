-- writeLock: write our claim and decide the holder in one step.
-- KEYS: 1 the lock's hash, 2 the admission marker, 3 the guard record, 4 the lineage record (see admit and data_since
--       in the prelude; single server only)
-- ARGV: 1 our field ("c" .. instance), 2 the nonce's counter (its last 16 hex digits without leading zeros: the nonce
--       is the instance, then the counter in 16 hex digits), 3 expiry ms, 4 owner part of the claim (a reference into
--       our owner record, or "=" and the owner's bytes), 5 restart guard ms (ours, or "<ours>:<longer>" once a longer
--       one recorded for the prefix refused us: see admit), 6 scrub ("1"/"0") and eviction check ("fail", "warn" or
--       "off") as one, e.g. "1off", 7 the key's TTL ms at a grant on the fast path (2 * ARGV 3 + 1, see there), 8
--       "<waiter id> <queue entry ms>" (absent or "" when this acquire does not wait; the ms say how long a waiter's
--       entry lives unless refreshed). Each pair travels as one argument: every argument costs every call a Lua
--       string and a slot of ARGV's table
-- A waiter that is refused is queued (or its entry refreshed, keeping its place); while a live waiter is queued,
-- the lock is granted to none but the first of them (no barging: a releaser asking again queues behind them).
-- A live claim in our field with another nonce is another transaction's and holds the lock like any other.
-- A request may run twice with one nonce: the driver repeats it when its reply was lost, and a first attempt held up
-- in the network may arrive after the repeat. Each nonce grants at most one claim. A copy that finds that claim live
-- answers its token and changes nothing (same seniority, same expiry): the caller counts its validity from before its
-- first attempt. A copy that finds our field holding its claim released, lapsed or dead, or a later claim of ours,
-- grants nothing ({-3}): its caller is done with it, and a grant would block the lock for nobody.
-- Reply: token                granted: our claim is the holder (an integer reply: a grant is all but always this)
--        {1, token, written, warning}  granted, with a warning: the server may evict it
--        {0, holder value, ms, holder field}  another live claim holds the lock, for at most ms more unless renewed;
--                             ours is not kept
--        {-5, owner part, queue field}  the lock is free but promised to the first waiter queued (the owner part of
--                             its entry, as in a claim, and its field "q" .. waiter name it)
--        {-2, ms left}        the server may have started less than the restart guard ago: nothing is granted yet
--        {-3}                 its client already gave up on this request and withdrew it, or is done with the claim
--                             it granted (released, lapsed) or with a later one: nothing is granted
--        {-4, policy, maxmemory}  the server may evict keys, ours included, and the check says fail
--        {-6, guard ms}       the lockers of this prefix use that other restart guard: nothing is granted, held
--                             lock or free (a refused waiter is not queued)
-- ARGV 3, 5 and 7 are whole numbers of ms, at least 0, in their shortest digits (RedisLocker writes them so): the fast
-- path writes ARGV 2 and 3 into the claim and ARGV 7 (twice the expiry and 1 ms) into PEXPIRE as they stand, trusting
-- RedisDriver's digits. ARGV 5 only picks the marker's key
-- (see RedisKeys.markerKey): admit parses it. A library call (tonumber,
-- string.format, string.match...) costs the server 700 to 3,700 instructions (callgrind), a plain Lua operation tens:
-- the fast path makes as few as it can.
-- sc is ARGV 6: its first byte is the scrub flag, the rest the eviction check (read only where needed)
local own, sc = ARGV[1], ARGV[6]
-- A grant whose token would not rise above the last one, or reach TOKEN_LIMIT (2^53, the prelude's), is refused with an
-- error, never made with a repeated or unreadable token. Only a field "t" that no script of ours wrote ("1e19",
-- "inf", "nan": an operator's HSET, another tool's restore) or a server clock that once read past the year 2255 gets
-- there; the lock then needs an operator (its key deleted: a forced release keeps the token field). (One literal: a
-- concatenation would be made on every call.)
local TOKEN_ERROR = 'ERR the last fencing token of this lock (field t or a claim) is not below 2^53: no grant can carry a higher one (a value no Locker script wrote, or a server clock once past the year 2255)'
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
  elseif f == own or string.byte(sc, 1) == 49 and string.byte(f, 1) == 99 then -- ours, or another claim ('c') we scrub
    local t, c = string.match(all[2], '^0 0 (%d+) (%x+) ')
    if t and #c <= 16 then -- (parse reads a longer counter as no claim at all)
      if f == own then
        -- our own released claim: a later request of ours has a higher counter (hex without leading zeros, so
        -- compared by length first); one at or below it is a late copy whose caller is done with it
        local ctr = ARGV[2]
        if c < '1' then -- leading zeros ("0005": not written so by our scripts, read so by parse)
          c = string.match(c, '^0*(%x+)$')
        end
        if #c > #ctr or #c == #ctr and c >= ctr then
          return { -3 }
        end
      end
      fast, last = true, t + 0
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
  local guard = ARGV[5]
  if guard ~= '0' or not (sc == '1off' or sc == '0off') then -- (plain comparisons: no string.sub on the way)
    -- admitted outright by a vouching marker of this boot: KEYS 2 is our guard argument's own marker, and admit
    -- writes it as LASTSAVE's digits alone only once that guard was waited out with no eviction (see admit). One
    -- tonumber, no pattern: no key, another boot's marker, the full form, an error reply or Cluster mode (no KEYS 2)
    -- compares unequal, and admit decides
    local marker = KEYS[2]
    if not (marker and tonumber(redis.pcall('GET', marker)) == redis.pcall('LASTSAVE')) then
      local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner,
          wake, may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
      local refusal
      refusal, warning = admit(now, guard, string.sub(sc, 2))
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
  -- the claim's value as claim_value writes it: written now (TIME's seconds and microseconds, as fmt(now) prints
  -- them), expiry ARGV 3 ms later (as fmt prints it: see above), the token's delta, the nonce's counter without
  -- leading zeros, the owner part
  local micros = time[2]
  if #micros < 6 then
    micros = string.sub('00000', #micros) .. micros
  end
  redis.call('HSET', key, own, time[1] .. micros .. ' ' .. ARGV[3] .. ' ' .. tokd .. ' ' .. ARGV[2] .. ' ' .. ARGV[4])
  if drop then
    redis.call('HDEL', key, drop) -- our claim carries the last token now (one field fewer while the lock is held)
  end
  -- the safety net as keep_until sets it: the key lives one expiry (the grace) after our claim's. Needed at every
  -- grant, though the key may have a TTL already: that TTL was set for an earlier claim (or a waiter or tombstone, with
  -- their lockers' graces), nothing in the hash records how far it reaches, and reading it (PTTL) costs what
  -- setting it costs; a key that lapsed under a live claim would let a second holder in.
  -- ARGV 7 is that TTL as the client computed it: no coercion nor string.format here, the same number
  redis.call('PEXPIRE', key, ARGV[7])
  if warning then
    return { 1, tok, now, warning }
  end
  return tok
end
-- the general path: the hash holds a claim, a tombstone or a queue entry (its HGETALL reply is reused)
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local expms = tonumber(ARGV[3])
local waiter, queue_ms = string.match(ARGV[8] or '', '^(%S+) (%d+)$')
-- the nonce, made again from our field's instance and the counter (only this path needs it whole)
local nonce = string.sub(own, 2) .. string.rep('0', 16 - #ARGV[2]) .. ARGV[2]
local s = scan(now, string.byte(sc, 1) == 49, own, nonce, waiter, all)
local _, counter = split_nonce(nonce)
if s.withdrawn and counter and counter <= s.withdrawn then
  -- a late request (fixed-width hex counters compare as strings): its client no longer waits for the answer
  if s.own then
    -- a repeat of a request whose first attempt was granted: never leave that grant behind
    keep_token(s, select(3, parse(s.own)))
    redis.call('HDEL', key, own)
  end
  return { -3 }
end
-- a copy of a request whose claim our field holds ended (released, lapsed, dead), or of one older than a claim of
-- ours that ended: its caller is done with it, so it is neither granted nor queued
local late = counter and s.ownCtr and s.ownCtr >= counter
if late and not s.own and s.senior ~= own then
  return { -3 }
end
if s.senior or (s.head and s.head ~= (waiter and ('q' .. waiter)) and not s.own) then
  if s.own then
    -- this very claim, from an earlier attempt of this request: never leave a losing claim behind
    keep_token(s, select(3, parse(s.own)))
    redis.call('HDEL', key, own)
  end
  -- the guard record, asked before an answer of held: a locker with another guard must learn the recorded one (and
  -- wait it out after a restart) whether the lock it asked for was held or free; it is not queued
  local refusal = other_guard(ARGV[5])
  if refusal then
    return refusal
  end
  if waiter then
    local untl = enqueue(s, waiter, now, tonumber(queue_ms), ARGV[4])
    keep_until(math.max(untl, s.maxexp, s.keep), now, expms)
  end
  if s.senior then
    local _, sexp = parse(s.seniorValue)
    return { 0, s.seniorValue, math.floor((sexp - now) / 1000) + 1, s.senior }
  end
  return { -5, queued_owner(s.headValue), s.head }
end
if late then
  -- this request's own claim, live: granted to an earlier copy of it. The same claim and token answer again.
  -- It is rewritten as it stands: WAIT counts a connection's writes, and this copy's must cover the first's.
  redis.call('HSET', key, own, s.own)
  local _, _, tok = parse(s.own)
  return tok
end
local refusal, warning = admit(now, ARGV[5], string.sub(sc, 2))
if refusal then
  return refusal
end
local tok = math.max(s.last + 1, now)
if not (tok > s.last and tok < TOKEN_LIMIT) then
  return redis.error_reply(TOKEN_ERROR)
end
local exp = now + expms * 1000
redis.call('HSET', key, own, claim_value(now, exp, tok, string.sub(nonce, 17), ARGV[4]))
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
if warning then
  return { 1, tok, now, warning }
end
return tok
