-- renewLocks: extend our claim's expiry in place (same written time, same token), only if it is ours and alive.
-- KEYS: 1 the lock's hash, 2 the guard record (see admit in the prelude; single server with a guard above 0 only)
-- ARGV: 1 our field, 2 nonce, 3 expiry ms, 4 scrub, 5 the guard record's life in ms, as admit sets it: the longer of
--       our restart guard and a second, plus a second (only with KEYS 2)
-- Reply: {1, token, written} renewed; {0, holder value, holder field} another claim is senior; {-1} ours is dead, gone
-- or left (see leave.lua)
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local own, expms = ARGV[1], tonumber(ARGV[3])
local now = server_now()
local s = scan(now, ARGV[4] == '1', own, ARGV[2])
if not s.own or string.match(s.own, '^%d+ 0%d') then
  -- a left claim is never renewed: a renewal's request landing after the leave neither lowers nor lengthens it
  return { -1 }
end
local ts, exp, tok, ctr, owner = parse(s.own)
if not is_senior(s, own, ts) then
  return { 0, s.seniorValue, s.senior }
end
local newexp = math.max(exp, now + expms * 1000) -- never earlier than before, whatever the clock did
redis.call('HSET', key, own, claim_value(ts, newexp, tok, ctr, owner))
keep_until(math.max(newexp, s.maxexp, s.keep), now, expms)
if KEYS[2] then
  -- the guard record outlives the claim we extend, as admit's refresh makes it outlive a grant: a locker with
  -- another guard is refused, and learns our guard, for as long as our claim lives
  redis.pcall('PEXPIRE', KEYS[2], ARGV[5])
end
return { 1, tok, ts }
