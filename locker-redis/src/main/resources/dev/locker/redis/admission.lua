-- Admission of a grant: the restart guard, the eviction check, the guard record and the lineage record. RedisScript
-- puts this file between the prelude (common.lua) and acquire.lua, and into no other script: none other runs it, and
-- a copy in each loaded script would cost every garbage collection step, which walks all loaded code.
-- admission(server_now, fmt) makes the functions (lib's two, which they use) and returns admit, other_guard. Like lib,
-- it captures nothing of the script's chunk: its closures are made only on the paths that call it.
local function admission(server_now, fmt)
  local redis = redis
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

  return admit, other_guard
end
