-- Shared prelude of every RedisLocker script (prepended to each one before it is loaded).
--
-- All claims on one lock live in ONE hash, KEYS[1]:
--   field "t"        the last fencing token issued for the lock (survives releases and forced releases)
--   field "c" .. rid one claim per locker instance, value "<written> <expiry> <token> <nonce>\n<owner bytes>"
--                    where <written> and <expiry> are server microseconds (TIME), <token> the claim's fencing token
--                    and <nonce> the claim's id (compare-and-delete matches on it): 16 hex digits naming the locker
--                    instance, then 16 hex digits counting that instance's acquires (see split_nonce)
--   field "w" .. instance  a tombstone, "<until> <counter>": the instance gave up on its acquires of this lock up to
--                    that counter (timed out, connection lost after sending) and withdrew them; until <until> (server
--                    microseconds) a late one that still arrives grants nothing. One field per instance, so it stays
--                    small: a later withdrawal raises the counter.
--   field "q" .. waiter  a waiter queued for the lock, "<seq> <until>\n<owner bytes>": a process waiting for it (one
--                    wait: 16 hex digits of its locker instance, 16 of the wait), served in the order of <seq> (from
--                    field "n", the queue's counter). The entry lives until <until> (server microseconds) unless its
--                    waiter comes back to refresh it; while a live waiter is queued, nobody who arrived later is granted
--                    the lock. A release, withdrawal or forced release with waiters queued publishes the lock's key
--                    on the locker's release channel, which wakes them. Field "n" exists only while some waiter may
--                    be queued (a scrubbing scan that finds none removes it), so a release looks further only then.
-- Publishing is always a script's last step, through pcall: a wake-up that fails (no channel permission) never stops
-- a script after it wrote, and costs waiters only speed.
-- The lock's name never appears in this source: it arrives as KEYS/ARGV bytes.
-- Numbers are written with string.format('%d'): Lua's tostring would print 1.7e+15 and lose digits.
local key = KEYS[1]

local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function fmt(n)
  return string.format('%d', n)
end

-- written, expiry, token, nonce, owner bytes of a claim value; nil when the value is not ours to read
local function parse(v)
  local nl = string.find(v, '\n', 1, true)
  if not nl then
    return nil
  end
  local ts, exp, tok, nonce = string.match(string.sub(v, 1, nl - 1), '^(%d+) (%d+) (%d+) (%S+)$')
  if not ts then
    return nil
  end
  return tonumber(ts), tonumber(exp), tonumber(tok), nonce, string.sub(v, nl + 1)
end

local function claim_value(ts, exp, tok, nonce, owner)
  return fmt(ts) .. ' ' .. fmt(exp) .. ' ' .. fmt(tok) .. ' ' .. nonce .. '\n' .. owner
end

-- The instance and counter parts of a nonce, or nil for a nonce of another shape.
local function split_nonce(n)
  if n == nil or #n ~= 32 then
    return nil
  end
  return string.sub(n, 1, 16), string.sub(n, 17)
end

-- One pass over the lock's hash: scrubs dead (or unreadable) claims when asked, and returns
--   last    the last token issued (0 when none)
--   size    how many fields the hash had (0: the key did not exist)
--   own     our claim's value when it is alive: the live claim in our field that carries our nonce. A live claim in
--           our field with another nonce is another transaction's (of this locker, or of a locker opened with the
--           same rid): it counts as any other claim, never as ours
--   senior  the senior live claim other than ours (field, written, value), ordered by (written, field)
--   maxexp  the latest expiry of the live claims other than ours
--   withdrawn  the counter up to which the nonce's instance withdrew its acquires (live tombstone), or nil
--   keep    the latest end of a live tombstone or queue entry (0 when none): the key must live until then
--   head    the first live queue entry's field (lowest seq), headValue its value; mine the waiter's own live entry
--   waiting how many live queue entries there are
local function scan(now, scrub, own, nonce, waiter)
  local all = redis.call('HGETALL', key)
  local r = { last = 0, size = #all / 2, maxexp = 0, keep = 0 }
  local instance = split_nonce(nonce)
  local tomb = instance and ('w' .. instance)
  local myq = waiter and ('q' .. waiter)
  r.waiting = 0
  local hasN = false
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    if f == 't' then
      r.last = tonumber(v) or 0
    elseif string.byte(f, 1) == 99 then -- 'c'
      local ts, exp, _, n = parse(v)
      if ts == nil or exp <= now then
        if scrub then
          redis.call('HDEL', key, f)
        end
      elseif f == own and n == nonce then
        r.own = v
      else
        if r.senior == nil or ts < r.seniorTs or (ts == r.seniorTs and f < r.senior) then
          r.senior, r.seniorTs, r.seniorValue = f, ts, v
        end
        if exp > r.maxexp then
          r.maxexp = exp
        end
      end
    elseif string.byte(f, 1) == 119 then -- 'w'
      local untl, counter = string.match(v, '^(%d+) (%x+)$')
      untl = tonumber(untl)
      if untl == nil or untl <= now then
        if scrub then
          redis.call('HDEL', key, f)
        end
      else
        if f == tomb then
          r.withdrawn = counter
        end
        if untl > r.keep then
          r.keep = untl
        end
      end
    elseif f == 'n' then
      hasN = true
    elseif string.byte(f, 1) == 113 then -- 'q'
      local seq, untl = string.match(v, '^(%d+) (%d+)\n')
      seq, untl = tonumber(seq), tonumber(untl)
      if seq == nil or untl <= now then
        if scrub then
          redis.call('HDEL', key, f)
        end
      else
        r.waiting = r.waiting + 1
        if r.head == nil or seq < r.headSeq then
          r.head, r.headSeq, r.headValue = f, seq, v
        end
        if f == myq then
          r.mine = v
        end
        if untl > r.keep then
          r.keep = untl
        end
      end
    end
  end
  if scrub and hasN and r.waiting == 0 then
    redis.call('HDEL', key, 'n') -- nobody queued: a release need not look for waiters
  end
  return r
end

-- Queues the waiter (or refreshes its entry, keeping its place) until now + ttl_ms; returns the entry's end.
local function enqueue(s, waiter, now, ttl_ms, owner)
  local seq
  if s.mine then
    seq = string.match(s.mine, '^(%d+) ')
  else
    seq = fmt((tonumber(redis.call('HGET', key, 'n')) or 0) + 1)
    redis.call('HSET', key, 'n', seq)
  end
  local untl = now + ttl_ms * 1000
  redis.call('HSET', key, 'q' .. waiter, seq .. ' ' .. fmt(untl) .. '\n' .. owner)
  return untl
end

-- The owner bytes of a queue entry's value.
local function queued_owner(v)
  local nl = string.find(v, '\n', 1, true)
  return string.sub(v, nl + 1)
end

-- Tells waiters that the lock may be free: publishes the lock's key on the release channel, when any is queued.
-- Call it last: it never fails the script (pcall), whatever the ACL allows.
local function wake(s, channel)
  if s.waiting > 0 and channel and channel ~= '' then
    redis.pcall('PUBLISH', channel, key)
  end
end

-- True when some waiter may be queued (field "n" exists): only then is a scan for waiters worth it.
local function may_have_waiters()
  return redis.call('HGET', key, 'n') ~= false
end

-- True when the claim (field f, written ts) is senior to the scan's senior other claim.
local function is_senior(s, f, ts)
  return s.senior == nil or ts < s.seniorTs or (ts == s.seniorTs and f < s.senior)
end

-- Safety net: the key vanishes one grace period after its last live claim expires, should nobody come back.
local function keep_until(maxexp, now, grace_ms)
  redis.call('PEXPIRE', key, fmt(math.floor((maxexp - now) / 1000) + 1 + grace_ms))
end
