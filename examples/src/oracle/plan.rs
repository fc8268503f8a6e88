//! Decision 1, which endpoints a request considers and in what order.

/// A request's exclusions and preference, resolved to configured indices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Excluded endpoints, as the request named them (repeats kept).
    pub excluded: Vec<usize>,
    /// The preferred endpoint.
    pub preferred: Option<usize>,
}

impl Selection {
    /// Whether the request excludes endpoint `i`.
    pub fn is_excluded(&self, i: usize) -> bool {
        self.excluded.contains(&i)
    }
}

/// Resolves the ids a request names against the `configured` ids (in configured order).
///
/// # Errors
///
/// The first id that is not configured, looking at the exclusions in order, then at the
/// preference: such a request fails before eligibility is asked or anything is sent.
pub fn resolve<'a, C: AsRef<str>>(
    configured: &[C],
    excluded: impl IntoIterator<Item = &'a str>,
    preferred: Option<&'a str>,
) -> Result<Selection, &'a str> {
    let index = |id: &str| configured.iter().position(|c| c.as_ref() == id);
    let mut selection = Selection::default();
    for id in excluded {
        selection.excluded.push(index(id).ok_or(id)?);
    }
    if let Some(id) = preferred {
        selection.preferred = Some(index(id).ok_or(id)?);
    }
    Ok(selection)
}

/// The endpoints one request considers, fixed when it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    asked: Vec<usize>,
    order: Vec<usize>,
}

impl Plan {
    /// The plan of a request over `endpoints` configured endpoints with `selection`.
    /// `eligible(i)` is the eligibility hook's answer: it is called once for every endpoint
    /// not excluded, in configured order, and the answers hold for the whole request.
    pub fn new(endpoints: usize, selection: &Selection, mut eligible: impl FnMut(usize) -> bool) -> Plan {
        let asked: Vec<usize> = (0..endpoints).filter(|&i| !selection.is_excluded(i)).collect();
        let mut order: Vec<usize> = asked.iter().copied().filter(|&i| eligible(i)).collect();
        if let Some(pos) = selection.preferred.and_then(|p| order.iter().position(|&i| i == p)) {
            let preferred = order.remove(pos);
            order.insert(0, preferred);
        }
        Plan { asked, order }
    }

    /// The endpoints whose eligibility is asked, in the order it is asked.
    pub fn asked(&self) -> &[usize] {
        &self.asked
    }

    /// The candidates, in the order they are considered.
    pub fn order(&self) -> &[usize] {
        &self.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_ids_are_found_exclusions_first() {
        let ids = ["a", "b"];
        assert_eq!(resolve(&ids, ["x", "b"], Some("y")), Err("x"));
        assert_eq!(resolve(&ids, ["b"], Some("y")), Err("y"));
        assert_eq!(resolve(&ids, ["b"], Some("a")), Ok(Selection { excluded: vec![1], preferred: Some(0) }));
    }

    #[test]
    fn preference_moves_to_the_front_only_when_a_candidate() {
        let s = |excluded: Vec<usize>, preferred| Selection { excluded, preferred };
        assert_eq!(Plan::new(4, &s(vec![], Some(2)), |_| true).order(), [2, 0, 1, 3]);
        assert_eq!(Plan::new(4, &s(vec![2], Some(2)), |_| true).order(), [0, 1, 3]);
        assert_eq!(Plan::new(4, &s(vec![], Some(2)), |i| i != 2).order(), [0, 1, 3]);
        let plan = Plan::new(4, &s(vec![1], None), |i| i != 3);
        assert_eq!((plan.asked(), plan.order()), (&[0, 2, 3][..], &[0, 2][..]));
    }
}
