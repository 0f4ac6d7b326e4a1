-- list: the senior live claim of each of several locks, decided on the server's clock exactly as holder.lua decides
-- it (the prelude's scan, pointed at each key in turn). Changes nothing: dead claims are left for the next acquire.
-- KEYS: the locks' keys (in Redis Cluster, one key per call: keys of different slots cannot share a script)
-- Reply: one entry per key, in order: {field, value} of the senior live claim, or 0 when the lock is free or the key is not a
--        lock hash (gone since it was scanned, or another type under the same pattern)
local server_now, fmt, parse, claim_value, is_nonce, keep_token, split_nonce, scan, enqueue, queued_owner, wake,
    may_have_waiters, is_senior, keep_until, admit, other_guard = lib()
local now = server_now()
local out = {}
for i = 1, #KEYS do
  out[i] = 0
  if redis.call('TYPE', KEYS[i])['ok'] == 'hash' then
    key = KEYS[i]
    local s = scan(now, false, nil, nil)
    if s.senior then
      out[i] = { s.senior, s.seniorValue }
    end
  end
end
return out
