-- checkLocks of a confirmed claim: is our claim (our field, our nonce) still alive and carrying our token?
-- Changes nothing. ARGV: 1 our field, 2 nonce, 3 our token
-- Reply: {1} still ours; {0, holder value, holder field} another claim holds the lock; {-1} ours is dead or gone
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local now = server_now()
local v = redis.call('HGET', key, ARGV[1])
if v then
  local ts, exp, tok, ctr = parse(v)
  if ts and is_nonce(ctr, ARGV[2]) and exp > now and fmt(tok) == ARGV[3] then
    return { 1 }
  end
end
local s = scan(now, false, nil, nil)
if s.senior then
  return { 0, s.seniorValue, s.senior }
end
return { -1 }
