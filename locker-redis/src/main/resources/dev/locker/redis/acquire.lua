-- writeLock: write our claim and decide the holder in one step.
-- ARGV: 1 our field ("c" .. rid), 2 nonce, 3 expiry ms, 4 owner bytes, 5 restart guard ms, 6 scrub ("1"/"0"),
--       7 eviction check ("fail", "warn" or "off"), 8 waiter id ("" when this acquire does not wait), 9 queue entry
--       ms (how long a waiter's entry lives unless refreshed)
-- A waiter that is refused is queued (or its entry refreshed, keeping its place); while a live waiter is queued,
-- the lock is granted to none but the first of them (no barging: a releaser asking again queues behind them).
-- A live claim in our field with another nonce is another transaction's and holds the lock like any other; only a
-- repeat of this request (same nonce, after a lost reply) replaces the claim it wrote.
-- Reply: {1, token, written[, warning]}  granted: our claim is the holder (warning: the server may evict it)
--        {0, holder value, ms}  another live claim holds the lock, for at most ms more unless renewed; ours is not kept
--        {-5, owner bytes}    the lock is free but promised to the first waiter queued (whose owner it names)
--        {-2, ms left}        the server may have started less than the restart guard ago: nothing is granted yet
--        {-3}                 its client already gave up on this request and withdrew it: nothing is granted
--        {-4, policy, maxmemory}  the server may evict keys, ours included, and the check says fail
local own, expms, guard = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[5])
local now = server_now()
local waiter = ARGV[8] ~= '' and ARGV[8] or nil
local s = scan(now, ARGV[6] == '1', own, ARGV[2], waiter)
local _, counter = split_nonce(ARGV[2])
if s.withdrawn and counter and counter <= s.withdrawn then
  -- a late request (fixed-width hex counters compare as strings): its client no longer waits for the answer
  if s.own then
    -- a repeat of a request whose first attempt was granted: never leave that grant behind
    redis.call('HDEL', key, own)
  end
  return { -3 }
end
if s.senior or (s.head and s.head ~= (waiter and ('q' .. waiter)) and not s.own) then
  if s.own then
    -- this very claim, from an earlier attempt of this request: never leave a losing claim behind
    redis.call('HDEL', key, own)
  end
  if waiter then
    local untl = enqueue(s, waiter, now, tonumber(ARGV[9]), ARGV[4])
    keep_until(math.max(untl, s.maxexp, s.keep), now, expms)
  end
  if s.senior then
    local _, sexp = parse(s.seniorValue)
    return { 0, s.seniorValue, math.floor((sexp - now) / 1000) + 1 }
  end
  return { -5, queued_owner(s.headValue) }
end
if guard > 0 then
  -- a server that restarted may have lost claims (no persistence, an older snapshot, the last second of an AOF)
  -- whose holders still work: grant nothing new until it has been up for the guard period
  local info = redis.pcall('INFO', 'server')
  if type(info) == 'table' then
    return redis.error_reply('NOPERM the restart guard needs the INFO command (or restartGuard=0): '
        .. tostring(info.err))
  end
  -- uptime_in_seconds is a difference of whole seconds (the start time is truncated), so it overstates the real
  -- uptime by up to 1 s. The real uptime is at least (uptime - 1) s plus the fraction of the current second, read
  -- after INFO so that INFO's second is not later than ours. A missing field counts as no uptime (fail closed).
  local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or 0
  local t = server_now()
  local least = (up - 1) * 1000000 + t % 1000000
  if least < guard * 1000 then
    return { -2, math.min(guard, math.ceil((guard * 1000 - least) / 1000)) }
  end
end
local warning
if ARGV[7] ~= 'off' then
  -- a server that may evict keys may drop this lock's key while its holder works, and then grant the lock again.
  -- Volatile policies too: the key carries the safety-net PEXPIRE. Checked where the key lives (per master)
  local mem = redis.pcall('INFO', 'memory')
  if type(mem) == 'table' then
    if ARGV[7] == 'fail' then
      return redis.error_reply('NOPERM the eviction check needs the INFO command (or evictionCheck=warn or off): '
          .. tostring(mem.err))
    end
    warning = 'cannot check maxmemory-policy: ' .. tostring(mem.err)
  else
    local maxmem = tonumber(string.match(mem, '\nmaxmemory:(%d+)'))
    local policy = string.match(mem, '\nmaxmemory_policy:([%w%-]+)') or 'unknown'
    if maxmem == nil or (maxmem > 0 and policy ~= 'noeviction') then
      if ARGV[7] == 'fail' then
        return { -4, policy, maxmem or -1 }
      end
      warning = 'maxmemory-policy ' .. policy .. ' with maxmemory ' .. fmt(maxmem or -1)
    end
  end
end
local tok = math.max(s.last + 1, now)
local exp = now + expms * 1000
redis.call('HSET', key, own, claim_value(now, exp, tok, ARGV[2], ARGV[4]), 't', fmt(tok))
if s.mine then
  redis.call('HDEL', key, 'q' .. waiter) -- served
  if s.waiting <= 1 then
    redis.call('HDEL', key, 'n')
  end
end
keep_until(math.max(exp, s.maxexp, s.keep), now, expms)
return { 1, tok, now, warning }
