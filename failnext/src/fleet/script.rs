//! The admission script: one atomic step in Redis per attempt to a provider with a budget.

use std::sync::OnceLock;

/// The generic cell rate algorithm, on Redis's clock (`TIME`), with the fleet-wide cooldown:
///
/// - `KEYS[1]`: the budget's theoretical arrival time, in microseconds;
/// - `KEYS[2]`: present while the provider cools fleet-wide;
/// - `ARGV[1]`: the interval between two requests at the budget's rate, in microseconds;
/// - `ARGV[2]`: how far ahead the budget may be spent (`burst - 1` intervals).
///
/// Returns 1 (admitted: the arrival time moved one interval on) or 0 (refused: cooling, or
/// the budget spent until later); the arrival time expires once it is in the past.
const ADMIT: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
if tat - now > tolerance then return 0 end
local next = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.floor((next - now) / 1000) + 1)
return 1
";

/// The admission script (sent once per connection, then called by its hash).
pub(super) fn admit() -> &'static redis::Script {
    static SCRIPT: OnceLock<redis::Script> = OnceLock::new();
    SCRIPT.get_or_init(|| redis::Script::new(ADMIT))
}
