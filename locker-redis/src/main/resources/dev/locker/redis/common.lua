-- Shared prelude of every RedisLocker script (prepended to each one before it is loaded).
--
-- All claims on one lock live in ONE hash, KEYS[1]:
--   field "t"        the last fencing token issued for a claim that is no longer in the hash (written when a claim is
--                    withdrawn, forced or scrubbed, or released other than in place, see below, so tokens keep rising;
--                    a held claim carries its own)
--   field "c" .. instance  one claim per locker instance (16 hex digits, random per locker), value
--                    "<written> <expms> <tokdelta> <counter> <owner>", compact so that a held lock's hash stays one
--                    small listpack (about 190 bytes of server memory per held lock): <written> server microseconds
--                    (TIME) when the claim was first written (its seniority); <expms> its expiry, in milliseconds after
--                    <written> (rounded up: the server never lets a claim lapse before its client's deadline);
--                    <tokdelta> its fencing token minus <written>; <counter> the instance's count of acquires, in hex
--                    without leading zeros (the claim's nonce is the instance, then the counter in 16 hex digits:
--                    compare-and-delete matches on it); <owner> either a decimal reference into the instance's owner
--                    record (the hash "<prefix>{}o" .. instance, written once per locker: rid, host, pid, and each
--                    thread/reason pair the locker claimed with), or "=" and the owner's bytes in full.
--                    A released claim is "0 0 <token> <counter> ": its releaser's fast path keeps the token in the
--                    claim's own field (one HSET) instead of writing "t" and deleting the field (two calls). Written 0
--                    with expiry 0, it is dead to every script of every layout, whatever the clock reads, and keeps its
--                    token like any dead claim (scan scrubs it into "t"; the next grant's token is higher).
--                    A left claim (leave.lua: released inside its hold-at-least) writes its expiry with one leading
--                    zero, "<written> 0<expms> ...". Every reader takes the same number; renew.lua refuses such a claim,
--                    so a late renewal can neither lower nor lengthen the time it was left for.
--   field "w" .. instance  a tombstone, "<until> <counter>": the instance gave up on its acquires of this lock up to
--                    that counter (timed out, connection lost after sending) and withdrew them; until <until> (server
--                    microseconds) a late one that still arrives grants nothing. One field per instance, so it stays
--                    small: a later withdrawal raises the counter.
--   field "q" .. waiter  a waiter queued for the lock, "<seq> <until>\n<owner part>": a process waiting for it (one
--                    wait: 16 hex digits of its locker instance, 16 of the wait), served in the order of <seq> (from
--                    field "n", the queue's counter). The entry lives until <until> (server microseconds) unless its
--                    waiter comes back to refresh it; while a live waiter is queued, nobody who arrived later is granted
--                    the lock. A release, withdrawal or forced release with waiters queued publishes the lock's key
--                    on the lock's own channel (see wake), which wakes them. Field "n" exists only while some waiter may
--                    be queued (a scrubbing scan that finds none removes it), so a release looks further only then.
-- Publishing is always a script's last step, through pcall: a wake-up that fails (no channel permission) never stops
-- a script after it wrote, and costs waiters only speed.
-- The lock's name never appears in this source: it arrives as KEYS/ARGV bytes.
-- Numbers are written with string.format('%d'): Lua's tostring would print 1.7e+15 and lose digits.
-- The acquire and release scripts serve the common shapes of a lock's hash (acquire: no field, only "t", or only a
-- released claim; release: only our claim) inline, and make the functions below only when the hash holds anything else; every other script
-- makes them at once. A Lua function is a closure made when its definition runs, i.e. on every call of the script,
-- used or not: made up front for every call, these cost about a tenth of the server CPU of an uncontended acquire and
-- release. lib() returns them as values (a table of them would cost as much again), and every script takes them all,
-- in this order:
--   local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
--   may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
-- The lock's key, shared by the scripts and lib's functions: list.lua points it at each lock in turn.
local key = KEYS[1]
-- lib comes before the chunk's other locals (at the end of this file) and makes its own, so that it captures only key:
-- lib is made on every call of every script, used or not, and each local it captured would be an object made with it
-- for the GC to sweep. Its own are the same: see there.
local function lib()
  local redis, ARGV, TOKEN_LIMIT = redis, ARGV, 9007199254740992
  local function server_now()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
  end

  -- A number's digits. At or above TOKEN_LIMIT (no Locker script makes one: times and tokens stay below it) or nan,
  -- it is written as 2^53, never as %d's overflow (-2^63): a token out of range that leaves a claim for field "t"
  -- keeps the lock refused (no grant exceeds 2^53) instead of letting the next token fall back.
  local function fmt(n)
    return string.format('%d', math.min(TOKEN_LIMIT, n))
  end

  -- written, expiry, token, counter (16 hex digits, as in a nonce), owner part of a claim value; nil when the value
  -- is not ours to read
  local function parse(v)
    local ts, expms, tokd, ctr, rest = string.match(v, '^(%d+) (%d+) (%d+) (%x+) ()')
    if not ts then
      -- the layout of earlier 0.1.0 snapshots, "<written> <expiry> <token> <nonce>\n<owner bytes>": a live claim of an
      -- older build is a live claim (never scrubbed as unreadable, which would grant its lock to a second holder)
      local exp, tok, nonce
      ts, exp, tok, nonce, rest = string.match(v, '^(%d+) (%d+) (%d+) (%x+)\n()')
      if not ts or #nonce ~= 32 then
        return nil
      end
      return tonumber(ts), tonumber(exp), tonumber(tok), string.sub(nonce, 17), '=' .. string.sub(v, rest)
    end
    if #ctr > 16 then
      return nil
    end
    ts = tonumber(ts)
    return ts, ts + tonumber(expms) * 1000, ts + tonumber(tokd), string.rep('0', 16 - #ctr) .. ctr, string.sub(v, rest)
  end

  -- A claim's value (see the top); ctr is 16 hex digits, owner the owner part as parse returns it.
  local function claim_value(ts, exp, tok, ctr, owner)
    local c = string.match(ctr, '^0*(%x+)$') or '0'
    return fmt(ts) .. ' ' .. fmt(math.max(0, math.ceil((exp - ts) / 1000))) .. ' ' .. fmt(tok - ts) .. ' ' .. c .. ' '
        .. owner
  end

  -- True when a claim's counter (as parse returns it) is the nonce's: with the claim in the nonce's own field, the
  -- claim is the one the nonce names.
  local function is_nonce(ctr, nonce)
    return nonce ~= nil and ctr == string.sub(nonce, 17)
  end

  -- Keeps the token of a claim that leaves the hash in field "t", so the next grant's token is higher. Call it before
  -- the claim's HDEL: the hash is then never emptied and made anew without its TTL.
  local function keep_token(s, tok)
    if tok and tok > s.t then -- compared with field "t" itself: s.last counts the claims' tokens, this one's too
      s.t = tok
      s.hasT = true
      redis.call('HSET', key, 't', fmt(tok))
    end
  end

  -- The instance and counter parts of a nonce, or nil for a nonce of another shape.
  local function split_nonce(n)
    if n == nil or #n ~= 32 then
      return nil
    end
    return string.sub(n, 1, 16), string.sub(n, 17)
  end

  -- One pass over the lock's hash: scrubs dead (or unreadable) claims when asked, and returns
  --   last    the last token issued (0 when none): field "t" or the highest token of a claim in the hash
  --   hasT    field "t" exists; t its value (0 when none)
  --   size    how many fields the hash had (0: the key did not exist)
  --   own     our claim's value when it is alive: the live claim in our field that carries our nonce. A live claim in
  --           our field with another nonce is another transaction's (of this locker, or of a locker opened with the
  --           same rid): it counts as any other claim, never as ours
  --   ownCtr  the counter (16 hex digits) of whatever claim our field holds, live, left, released or dead; nil when
  --           the field holds none
  --   senior  the senior live claim other than ours (field, written, value), ordered by (written, field)
  --   maxexp  the latest expiry of the live claims other than ours
  --   withdrawn  the counter up to which the nonce's instance withdrew its acquires (live tombstone), or nil
  --   keep    the latest end of a live tombstone or queue entry (0 when none): the key must live until then
  --   head    the first live queue entry's field (lowest seq), headValue its value; mine the waiter's own live entry
  --   waiting how many live queue entries there are; legacy how many of them an older build's waiters made
  -- all is the hash's HGETALL reply when the caller read it already (read here when nil).
  local function scan(now, scrub, own, nonce, waiter, all)
    all = all or redis.call('HGETALL', key)
    local r = { last = 0, t = 0, size = #all / 2, maxexp = 0, keep = 0 }
    local instance = split_nonce(nonce)
    local tomb = instance and ('w' .. instance)
    local myq = waiter and ('q' .. waiter)
    r.waiting = 0
    r.legacy = 0
    local hasN = false
    local scrubbed, dead = 0, {}
    for i = 1, #all, 2 do
      local f, v = all[i], all[i + 1]
      if f == 't' then
        r.t = tonumber(v) or 0
        if not (r.t <= r.last) then -- (a "t" of nan too: then the last token is unknown, and no grant is made)
          r.last = r.t
        end
        r.hasT = true
      elseif string.byte(f, 1) == 99 then -- 'c'
        local ts, exp, tok, ctr = parse(v)
        if tok and tok > r.last then
          r.last = tok
        end
        if f == own then
          r.ownCtr = ctr
        end
        if ts == nil or exp <= now then
          if scrub then
            dead[#dead + 1] = f
            if tok and tok > scrubbed then
              scrubbed = tok
            end
          end
        elseif f == own and is_nonce(ctr, nonce) then
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
          if #f == 33 then -- an older build's waiter: "q" and 32 hex digits, listening on its prefix's channel
            r.legacy = r.legacy + 1
          end
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
    if scrubbed > r.t and scrubbed >= r.last then
      redis.call('HSET', key, 't', fmt(scrubbed)) -- the highest token was a dead claim's: keep it
      r.t = scrubbed
      r.hasT = true
    end
    if #dead > 0 then
      -- after "t" is written: the hash is never emptied and made anew, so the key keeps its TTL
      redis.call('HDEL', key, unpack(dead))
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

  -- The owner part of a queue entry's value (as in a claim: a reference into its locker's owner record, or "=" and the
  -- owner's bytes).
  local function queued_owner(v)
    local nl = string.find(v, '\n', 1, true)
    return string.sub(v, nl + 1)
  end

  -- Tells waiters that the lock may be free, when any is queued. A waiter of this build listens on the lock's own
  -- channel: its key and "w", in its slot. So a release reaches only the lockers waiting on this lock.
  -- A waiter of an older build (id of 32 characters) listens on the prefix's channel, told only while one is queued.
  -- Call it last: it never fails the script (pcall), whatever the ACL allows.
  local function wake(s, channel)
    if channel == nil or channel == '' then
      return
    end
    if s.waiting > s.legacy then
      redis.pcall('PUBLISH', key .. 'w', key)
    end
    if s.legacy > 0 then
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

  -- The refusal {-6, recorded guard} of a locker whose own guard (guards as admit takes them) differs from the guard
  -- recorded for its prefix, or nil. An acquire asks it on every path, the lock held or free: a locker told only
  -- that a lock is held would never learn the longer guard it must wait out after a restart.
  local function other_guard(guards)
    local record, own = KEYS[3], tonumber(string.match(guards, '^(%d+)'))
    if record and own and own > 0 then
      local g = redis.pcall('GET', record)
      if type(g) == 'string' and tonumber(g) ~= own then
        return { -6, g }
      end
    end
    return nil
  end

  -- Admission of a grant: the restart guard and the eviction check, at no cost per grant in the steady state.
  -- Both need INFO (server: uptime; memory: maxmemory and its policy), which costs several microseconds of server
  -- CPU. Their answers are kept in a marker key (KEYS[2], one per server and guard argument, "<prefix>{}guard<ARGV 5>";
  -- none in Cluster mode, where a second key would make the script fail with TRYAGAIN while its slot migrates), never
  -- replicated nor in the AOF. It vouches, "<lastsave>" alone, once admit found the guard waited out and no eviction:
  -- then acquire.lua's fast path compares it with LASTSAVE and grants, with no pattern to match. Otherwise it keeps
  -- INFO's answers for admit, "<lastsave> <upsince> <ok>[ <guard>]":
  --   lastsave  LASTSAVE when the marker was written. LASTSAVE is set to the boot time when the server starts (from
  --             an RDB, an AOF or nothing) and moves on with every save, so a marker that survives a restart (in a
  --             snapshot, an AOF) or outlives a save no longer matches, and INFO is read again. A marker is written
  --             only in a later second than LASTSAVE, so that a restart in the same second cannot match it either
  --             (LASTSAVE has whole seconds); the server's clock must not step back, as the guard already assumes.
  --   upsince   server microseconds since which the data here is known whole: the later of the server's start
  --             (from INFO's uptime, rounded against us) and the start of its data's lineage (see data_since). The
  --             guard counts from it, whatever guard a locker asks.
  --   ok        1 when maxmemory is 0 or the policy is noeviction. A 0 is never trusted: the check reads INFO memory
  --             again, so a refusal always names the current policy.
  --   guard     the restart guard (ms) the guard record (below) held when the marker was written; absent when the
  --             script was given no record or asked with a guard of 0. A marker with a guard vouches only for a
  --             locker asking with that guard.
  -- The guard record (KEYS[3], standalone only) holds the restart guard the lockers of this prefix use. After a restart
  -- without data the server knows nothing of the claims it lost, so every locker must wait out the same guard: one
  -- asking with another guard is refused ({-6, recorded guard}) while the record lives. Every admission refreshes it
  -- for the longer of its guard and a second, plus a second, and so does every renewal (renew.lua): it outlives every
  -- claim granted under it, since no expiry exceeds its guard. A guard of 0 declares that the server keeps its data
  -- across restarts: it neither reads nor writes the record. Where that holds no claim is lost, whatever guard others
  -- use; where it does not, a guard of 0 fails alone (the doctor checks the declaration against the persistence).
  -- guards is ARGV 5 of acquire.lua: the locker's own guard in ms, or "<own>:<longer>" once the locker has been refused
  -- for a longer guard recorded here. The restart loses the record, not the locker's memory: it then waits out the
  -- longer guard, so the claims granted under it stay covered. No marker admits that form outright.
  -- The marker lives 1 s (PX), so a CONFIG SET to an evicting policy is noticed within a second. Without LASTSAVE, GET
  -- or SET in the ACL, every grant reads INFO as before (pcall: no marker, same answers). acquire.lua's fast path
  -- reads the marker itself and calls this only when the marker does not admit the grant outright.
  -- The lineage record (KEYS[4], standalone only), "<replid> <since>", replicated and persisted with the claims:
  -- since (server microseconds) is when the data of replication id <replid> was last known to start anew. A server's
  -- uptime alone says nothing of a promoted replica's data: one that resynced from a master restarted without data
  -- lost the claims too, yet has been up for long. Redis gives a master a new replication id at every start and at
  -- every promotion, and a promoted replica keeps its former id as master_replid2. So the data here continues the
  -- recorded lineage only when the record names one of the two ids. A master whose replid2 is all zeros has never
  -- taken data over since it started: its data dates from its start. Any other server took data over whose age is
  -- unknown, so its lineage starts now, and grants wait out the guard. The lineage never starts before the server
  -- itself: a restart from an older snapshot keeps the record but not the claims written after it. A record written
  -- by another server's clock is off by at most serverClockSkew, which every holder's validity already allows for.
  -- A server that reports no replication ids (before Redis 4) keeps the uptime basis alone.
  local function data_since(now, upsince)
    local lineage = KEYS[4]
    local info = lineage and redis.pcall('INFO', 'replication')
    if type(info) ~= 'string' then
      return upsince
    end
    local id, id2 = string.match(info, 'master_replid:(%x+)'), string.match(info, 'master_replid2:(%x+)')
    if not id then
      return upsince
    end
    local m, mid, msince = redis.pcall('GET', lineage), nil, nil
    if type(m) == 'string' then
      mid, msince = string.match(m, '^(%x+) (%d+)$')
    end
    local since
    if mid and (mid == id or mid == id2) then
      since = math.max(upsince, tonumber(msince))
    elseif id2 == nil or string.match(id2, '^0+$') then
      since = upsince
    else
      since = now
    end
    if mid ~= id or tonumber(msince) ~= since then
      -- replicated (and in the AOF) like a claim: the replica a failover promotes learns where this lineage starts
      redis.pcall('SET', lineage, id .. ' ' .. fmt(since))
    end
    return since
  end

  -- Returns (refusal reply or nil, warning or nil).
  local function admit(now, guards, check)
    local own, longer = string.match(guards, '^(%d+):?(%d*)$')
    own = tonumber(own)
    local guard = math.max(own, tonumber(longer) or 0) -- the guard to wait out
    if guard <= 0 and check == 'off' then
      return nil, nil
    end
    local saved = redis.pcall('LASTSAVE')
    local marker = KEYS[2]
    local upsince, ok, marked
    if type(saved) == 'number' and marker then
      local m = redis.pcall('GET', marker)
      if longer == '' and tonumber(m) == saved then
        -- the vouching form of this guard argument's own marker (written below): the guard record agreed, the guard
        -- was waited out and nothing is evicted, in this boot; as on the acquire's fast path, nothing more to check
        return nil, nil
      end
      if type(m) == 'string' then
        local ms, us, e, g = string.match(m, '^(%d+) (%d+) ([01]) ?(%d*)$')
        if ms and tonumber(ms) == saved then
          upsince, ok, marked = tonumber(us), e == '1', tonumber(g)
        end
      end
    end
    local record = KEYS[3]
    if record and own > 0 and marked ~= own then
      -- one guard per prefix: a locker with another one would grant a lock a restart lost before its holder gave up
      local refusal = other_guard(guards)
      if refusal then
        return refusal, nil
      end
      redis.pcall('SET', record, fmt(own), 'PX', fmt(math.max(own, 1000) + 1000))
    end
    local fresh = upsince == nil
    local t
    if fresh then
      local info = redis.pcall('INFO', 'server')
      if type(info) == 'table' then
        if guard > 0 then
          return redis.error_reply('NOPERM the restart guard needs the INFO command (or restartGuard=0): '
              .. tostring(info.err)), nil
        end
      else
        -- uptime_in_seconds is a difference of whole seconds (the start time is truncated), so it overstates the real
        -- uptime by up to 1 s. The real uptime is at least (uptime - 1) s plus the fraction of the current second, read
        -- after INFO so that INFO's second is not later than ours. A missing field counts as no uptime (fail closed).
        local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or 0
        t = server_now()
        upsince = data_since(t, t - ((up - 1) * 1000000 + t % 1000000))
      end
    end
    local mem, maxmem, policy
    if check ~= 'off' and not ok or fresh and upsince then
      mem = redis.pcall('INFO', 'memory')
      if type(mem) ~= 'table' then
        maxmem = tonumber(string.match(mem, '\nmaxmemory:(%d+)'))
        policy = string.match(mem, '\nmaxmemory_policy:([%w%-]+)') or 'unknown'
        ok = maxmem ~= nil and (maxmem == 0 or policy == 'noeviction')
      end
    end
    if fresh and upsince and type(saved) == 'number' and marker and type(mem) ~= 'table'
        and math.floor(t / 1000000) > saved then
      -- the marker is a fact about this server alone: it must never reach a replica (which may evict, or have booted in
      -- the same second) nor the AOF. Where replication cannot be switched off for it, no marker is written.
      if pcall(redis.set_repl, redis.REPL_NONE) then
        local vouches = (record and own > 0) and (' ' .. fmt(own)) or ''
        local value = fmt(saved) .. ' ' .. fmt(upsince) .. ' ' .. (ok and '1' or '0') .. vouches
        if ok and longer == '' and now - upsince >= guard * 1000 then
          -- the vouching form, for grants of this guard argument alone (the key is its own): the guard record agreed
          -- above, the guard is waited out, and nothing is evicted. Its grants recheck nothing but the boot
          value = fmt(saved)
        end
        redis.pcall('SET', marker, value, 'PX', 1000)
        redis.set_repl(redis.REPL_ALL)
      end
    end
    if guard > 0 then
      -- a server that restarted may have lost claims (no persistence, an older snapshot, the last second of an AOF)
      -- whose holders still work, and so may a replica promoted after taking such data over: grant nothing new until
      -- its data has been whole for the guard period
      local least = now - upsince
      if least < guard * 1000 then
        return { -2, math.min(guard, math.ceil((guard * 1000 - least) / 1000)) }, nil
      end
    end
    if check == 'off' or ok then
      return nil, nil
    end
    -- a server that may evict keys may drop this lock's key while its holder works, and then grant the lock again.
    -- Volatile policies too: the key carries the safety-net PEXPIRE. Checked where the key lives (per master)
    if type(mem) == 'table' then
      if check == 'fail' then
        return redis.error_reply('NOPERM the eviction check needs the INFO command (or evictionCheck=warn or off): '
            .. tostring(mem.err)), nil
      end
      return nil, 'cannot check maxmemory-policy: ' .. tostring(mem.err)
    end
    if check == 'fail' then
      return { -4, policy, maxmem or -1 }, nil
    end
    return nil, 'maxmemory-policy ' .. policy .. ' with maxmemory ' .. fmt(maxmem or -1)
  end

  return server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
      may_have_waiters, is_senior, keep_until, admit, other_guard
end

-- Globals read through locals: each read of a global is a table lookup call (about 65 instructions, callgrind), a
-- local's read is none. The fast paths read ARGV and redis a score of times per call.
local redis, ARGV = redis, ARGV
-- Tokens and times are counted in Lua doubles, exact below 2^53: no grant makes a token at or above it (acquire), and
-- no number is written past it (fmt).
local TOKEN_LIMIT = 9007199254740992
