//! The admission script: one atomic step in Redis per attempt to a provider with a budget.

use std::sync::OnceLock;

/// The generic cell rate algorithm on Redis's clock (`TIME`), fleet-wide and per process, with
/// the fleet-wide cooldown:
///
/// - `KEYS[1]`: the budget's theoretical arrival time (TAT), in microseconds;
/// - `KEYS[2]`: present while the provider cools fleet-wide;
/// - `KEYS[3]`: this process's own TAT for its share of the budget;
/// - `KEYS[4]`: the processes using the budget (a sorted set, scored by their last admission);
/// - `ARGV[1]`: the interval between two requests at the budget's rate, in microseconds;
/// - `ARGV[2]`: how far ahead the budget may be spent (`burst - 1` intervals);
/// - `ARGV[3]`: this process's id in the fleet.
///
/// A request is admitted when the budget is not spent (its TAT at most the tolerance ahead)
/// and this process's share is not either: its share is the budget divided among the
/// processes that used it in the last two seconds, so that when every process wants more than
/// the provider serves, each gets the same. A process past its share may still take a request
/// while the budget is idle (its TAT not ahead of now: nobody else wants it). Returns 1
/// (admitted: both TATs moved on) or 0 (refused); the keys expire once they are in the past.
const ADMIT: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
redis.call('ZADD', KEYS[4], now, ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 2000000)
redis.call('PEXPIRE', KEYS[4], 10000)
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
if tat - now > tolerance then return 0 end
local share = interval * redis.call('ZCARD', KEYS[4])
local own = tonumber(redis.call('GET', KEYS[3]) or '0')
if own < now then own = now end
if own - now > tolerance and tat > now then return 0 end
redis.call('SET', KEYS[1], string.format('%.0f', tat + interval), 'PX', math.floor((tat + interval - now) / 1000) + 1)
redis.call('SET', KEYS[3], string.format('%.0f', own + share), 'PX', math.floor((own + share - now) / 1000) + 1)
return 1
";

/// A lease: `KEYS[1]` held by `ARGV[1]` for `ARGV[2]` ms. Taken when free, renewed when this
/// member holds it; returns 1 when the member holds it after the call, 0 when another does.
const HOLD: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
";

/// A number note raised: `KEYS[1]` set to `ARGV[1]` for `ARGV[2]` ms when it holds less (or
/// nothing, or not a number), and then `ARGV[4]` published on channel `ARGV[3]`; returns 1
/// when raised, 0 when it held as much already. (Block numbers are far below 2^53: exact as
/// Lua's numbers.)
const RAISE: &str = r"
local held = tonumber(redis.call('GET', KEYS[1]) or '') or -1
if held >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
";

/// The raise script.
pub(super) fn raise() -> &'static redis::Script {
    static SCRIPT: OnceLock<redis::Script> = OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(RAISE))
}

/// The lease script.
pub(super) fn hold() -> &'static redis::Script {
    static SCRIPT: OnceLock<redis::Script> = OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(HOLD))
}

/// The admission script (sent once per connection, then called by its hash).
pub(super) fn admit() -> &'static redis::Script {
    static SCRIPT: OnceLock<redis::Script> = OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(ADMIT))
}
