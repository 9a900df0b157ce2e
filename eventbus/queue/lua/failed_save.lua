-- Store a failed job record and index it by time. KEYS: records, index  ARGV: uuid, json, failed_at
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
redis.call('zadd', KEYS[2], ARGV[3], ARGV[1])
return 1
