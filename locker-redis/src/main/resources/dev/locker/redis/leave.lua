-- leave: a release inside the hold-at-least. Sets our claim's expiry to exactly the time left (lower than it was if
-- need be) and marks the claim left (see the prelude), only if the claim is ours and alive. Same written time, same
-- token: the claim keeps the lock until then, and nobody renews it again.
-- KEYS: 1 the lock's hash, 2 the guard record (as in renew.lua: single server with a guard above 0 only)
-- ARGV: 1 our field, 2 nonce, 3 expiry ms (the time left), 4 scrub, 5 the guard record's life in ms (only with KEYS 2)
-- Reply: {1, token, written} left (also when a repeat finds it left already: the reply of a leave that was lost);
-- {0, holder value, holder field} another claim is senior; {-1} ours is dead or gone
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local own, expms = ARGV[1], tonumber(ARGV[3])
local now = server_now()
local s = scan(now, ARGV[4] == '1', own, ARGV[2])
if not s.own then
  return { -1 }
end
local ts, exp, tok, ctr, owner = parse(s.own)
if not is_senior(s, own, ts) then
  return { 0, s.seniorValue, s.senior }
end
if string.match(s.own, '^%d+ 0%d') then
  -- left already: a repeat of this leave changes nothing, so the first to land sets the end
  return { 1, tok, ts }
end
local newexp = now + expms * 1000
-- the mark is a leading zero on the expiry: every reader takes the same number, and renew.lua sees it
local left = string.gsub(claim_value(ts, newexp, tok, ctr, owner), ' ', ' 0', 1)
redis.call('HSET', key, own, left)
keep_until(math.max(newexp, s.maxexp, s.keep), now, expms)
if KEYS[2] then
  -- as renew.lua: the guard record outlives the claim we leave behind
  redis.pcall('PEXPIRE', KEYS[2], ARGV[5])
end
return { 1, tok, ts }
