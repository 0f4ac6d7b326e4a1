-- dequeue: a waiter gave up (its wait ran out, or it was interrupted): removes its queue entry, and wakes the
-- waiters behind it when the lock is free, so the next one does not wait for the entry to lapse.
-- ARGV: 1 waiter id, 2 the prefix's release channel (an older build's waiters listen there; see wake)
-- Reply: 1 the entry was there and is removed, 0 it was not
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local now = server_now()
local s = scan(now, false, nil, nil, ARGV[1])
if not s.mine then
  return 0
end
redis.call('HDEL', key, 'q' .. ARGV[1])
s.waiting = s.waiting - 1
if #ARGV[1] == 32 then
  s.legacy = s.legacy - 1
end
if s.waiting == 0 then
  redis.call('HDEL', key, 'n')
end
if not s.senior then
  wake(s, ARGV[2])
end
return 1
