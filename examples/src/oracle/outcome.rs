//! Decision 3, does an outcome fail over, and what a request ends with.

/// How one attempt ended, as far as the rules look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempted {
    /// An HTTP response with this status, whatever its body says.
    Status(u16),
    /// Any error from the rest of the chain (connect, timeout, reset, ...).
    Error,
}

/// The statuses that trigger failover whatever is configured.
pub const BUILTIN_TRIGGERS: [u16; 3] = [502, 503, 504];

/// The trigger statuses of one configuration: [`BUILTIN_TRIGGERS`] and the additions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Triggers {
    additional: Vec<u16>,
}

impl Triggers {
    /// The built-in triggers plus `additional` (any code may be added, 2xx included).
    pub fn new(additional: impl IntoIterator<Item = u16>) -> Triggers {
        Triggers { additional: additional.into_iter().collect() }
    }

    /// Whether a response with `status` triggers failover (and is retained while the next
    /// candidate is tried).
    pub fn is_trigger(&self, status: u16) -> bool {
        BUILTIN_TRIGGERS.contains(&status) || self.additional.contains(&status)
    }

    /// Whether the request may go on after this outcome: every error does, a response only
    /// when its status is a trigger. Every other response is returned at once.
    pub fn fails_over(&self, outcome: Attempted) -> bool {
        match outcome {
            Attempted::Status(status) => self.is_trigger(status),
            Attempted::Error => true,
        }
    }
}

/// What a request must end with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected<E = usize> {
    /// The response of attempt `attempt` (0-based), from `endpoint`, with `status`.
    Response {
        /// Which attempt produced it.
        attempt: usize,
        /// Who served it.
        endpoint: E,
        /// Its status.
        status: u16,
    },
    /// Nothing was attempted: no candidate, or every candidate was skipped.
    NoUsableEndpoint,
    /// Every attempt failed without a response: a failover error listing them, in order.
    Failover(Vec<E>),
}

/// The result rule, from a request's attempts in order: the last HTTP response wins (a
/// trigger response is retained while later candidates are tried, and a newer response
/// replaces it); without any response, a failover error listing every attempt; without any
/// attempt, "no usable endpoint".
pub fn expected_result<E: Clone>(attempts: &[(E, Attempted)]) -> Expected<E> {
    let last_response =
        attempts.iter().enumerate().rev().find_map(|(i, (endpoint, outcome))| match outcome {
            Attempted::Status(status) => {
                Some(Expected::Response { attempt: i, endpoint: endpoint.clone(), status: *status })
            }
            Attempted::Error => None,
        });
    match last_response {
        Some(response) => response,
        None if attempts.is_empty() => Expected::NoUsableEndpoint,
        None => Expected::Failover(attempts.iter().map(|(e, _)| e.clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retained_response_survives_later_errors() {
        let a = [(0, Attempted::Status(503)), (1, Attempted::Error)];
        assert_eq!(expected_result(&a), Expected::Response { attempt: 0, endpoint: 0, status: 503 });
        assert_eq!(expected_result(&a[1..]), Expected::Failover(vec![1]));
        assert_eq!(expected_result::<usize>(&[]), Expected::NoUsableEndpoint);
        let t = Triggers::new([429]);
        assert!(t.is_trigger(429) && t.is_trigger(502) && !t.is_trigger(500));
        assert!(t.fails_over(Attempted::Error) && !t.fails_over(Attempted::Status(200)));
    }
}
