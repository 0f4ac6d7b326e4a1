-- withdraw: its client gave up on an acquire whose outcome it does not know (timed out, connection lost after
-- sending, too few replica acknowledgements). Removes the claim that acquire may have written (compare-and-delete on
-- its nonce) and leaves a tombstone for its instance, so that the request, should it arrive only now, grants nothing.
-- ARGV: 1 our field, 2 nonce, 3 tombstone ms, 4 expiry ms (the safety net's grace), 5 scrub, 6 release channel
-- Reply: 1 our claim was there (live, dead or released in place) and is removed, 0 it was not (yet)
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local own, nonce, ttl, expms = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local now = server_now()
local s = scan(now, ARGV[5] == '1', own, nonce)
local removed = 0
local v = redis.call('HGET', key, own)
if v then
  local _, _, tok, ctr = parse(v)
  if ctr and is_nonce(ctr, nonce) then
    keep_token(s, tok)
    redis.call('HDEL', key, own)
    removed = 1
  end
end
local instance, counter = split_nonce(nonce)
if instance then
  if s.withdrawn and s.withdrawn > counter then
    counter = s.withdrawn
  end
  local untl = now + ttl * 1000
  redis.call('HSET', key, 'w' .. instance, fmt(untl) .. ' ' .. counter)
  keep_until(math.max(untl, s.maxexp, s.keep), now, expms)
end
if removed == 1 then
  wake(s, ARGV[6]) -- last: the tombstone is written whatever happens to the wake-up
end
return removed
