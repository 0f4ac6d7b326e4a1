-- Shared prelude of every RedisLocker script (prepended to each one before it is loaded).
--
-- All claims on one lock live in ONE hash, KEYS[1]:
--   field "t"        the last fencing token issued for the lock (survives releases and forced releases)
--   field "c" .. rid one claim per locker instance, value "<written> <expiry> <token> <nonce>\n<owner bytes>"
--                    where <written> and <expiry> are server microseconds (TIME), <token> the claim's fencing token
--                    and <nonce> the claim's id within its locker (compare-and-delete matches on it).
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

-- One pass over the lock's hash: scrubs dead (or unreadable) claims when asked, and returns
--   last    the last token issued (0 when none)
--   size    how many fields the hash had (0: the key did not exist)
--   own     our claim's value when it is alive: the live claim in our field that carries our nonce. A live claim in
--           our field with another nonce is another transaction's (of this locker, or of a locker opened with the
--           same rid): it counts as any other claim, never as ours
--   senior  the senior live claim other than ours (field, written, value), ordered by (written, field)
--   maxexp  the latest expiry of the live claims other than ours
local function scan(now, scrub, own, nonce)
  local all = redis.call('HGETALL', key)
  local r = { last = 0, size = #all / 2, maxexp = 0 }
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
    end
  end
  return r
end

-- True when the claim (field f, written ts) is senior to the scan's senior other claim.
local function is_senior(s, f, ts)
  return s.senior == nil or ts < s.seniorTs or (ts == s.seniorTs and f < s.senior)
end

-- Safety net: the key vanishes one grace period after its last live claim expires, should nobody come back.
local function keep_until(maxexp, now, grace_ms)
  redis.call('PEXPIRE', key, fmt(math.floor((maxexp - now) / 1000) + 1 + grace_ms))
end
