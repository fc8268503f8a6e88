//! The agreement rule ([`agree`]): which head, by number and hash, enough eligible providers
//! of one check report, found once when the check's entries are assembled.
//!
//! Above both the entries it reads ([`SnapshotEntry`]) and the [`AgreedHead`] it makes, so
//! that the snapshot holding the result need not know how it was found.

use failnext::EndpointId;

use crate::judging::agreed::AgreedHead;
use crate::judging::entry::SnapshotEntry;
use crate::probe::block_hash::BlockHash;

/// The default of [`MonitorBuilder::agreement`](crate::MonitorBuilder::agreement).
pub(crate) const DEFAULT_AGREEMENT: u32 = 2;

/// The agreed head of a check's `entries`: among the eligible entries that reported a hash,
/// the highest height at which one `(number, hash)` was reported by at least `k` of them
/// (`k` clipped to their number) and by more of them than any other hash at that height. A
/// height whose top hashes tie is skipped, as is a height without `k` matching reports.
/// `None` when no height qualifies, or no eligible entry reported a hash.
pub(crate) fn agree(entries: &[SnapshotEntry], k: u32) -> Option<AgreedHead> {
    let reports: Vec<(u64, BlockHash, &EndpointId)> = entries
        .iter()
        .filter(|entry| entry.is_eligible())
        .filter_map(|entry| Some((entry.height()?, entry.head_hash()?, entry.endpoint())))
        .collect();
    let k = usize::try_from(k).unwrap_or(usize::MAX).clamp(1, reports.len().max(1));
    let mut heights: Vec<u64> = reports.iter().map(|(height, ..)| *height).collect();
    heights.sort_unstable_by(|a, b| b.cmp(a));
    heights.dedup();
    // A handful of providers: counting by scanning is as fast as hashing.
    for height in heights {
        let mut heads: Vec<(BlockHash, usize)> = Vec::new();
        for (_, hash, _) in reports.iter().filter(|(h, ..)| *h == height) {
            match heads.iter_mut().find(|(seen, _)| seen == hash) {
                Some((_, count)) => *count += 1,
                None => heads.push((*hash, 1)),
            }
        }
        let most = heads.iter().map(|(_, count)| *count).max().unwrap_or(0);
        let mut top = heads.iter().filter(|(_, count)| *count == most);
        let (Some((hash, _)), None) = (top.next(), top.next()) else { continue };
        if most < k {
            continue;
        }
        let providers = reports
            .iter()
            .filter(|(h, seen, _)| *h == height && seen == hash)
            .map(|(.., id)| (*id).clone())
            .collect();
        return Some(AgreedHead::new(height, *hash, providers));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::fitness::Fitness;

    fn hash(byte: u8) -> BlockHash {
        BlockHash::new([byte; 32])
    }

    /// An entry of `id` at `height` with `hash`, eligible or not.
    fn entry(id: &str, height: u64, hash: Option<u8>, eligible: bool) -> SnapshotEntry {
        let fitness = if eligible { Fitness::Fit { behind: 0 } } else { Fitness::Lagging { behind: 9 } };
        SnapshotEntry::probed(id.into(), height, fitness).with_head_hash(hash.map(self::hash))
    }

    /// The agreed number, hash and providers (ids joined by `,`).
    fn agreed(entries: &[SnapshotEntry], k: u32) -> Option<(u64, BlockHash, String)> {
        agree(entries, k).map(|a| {
            let ids: Vec<&str> = a.providers().iter().map(|id| id.as_str()).collect();
            (a.number(), a.hash(), ids.join(","))
        })
    }

    #[test]
    fn the_most_reported_hash_at_the_highest_corroborated_height_wins() {
        let entries =
            [entry("a", 100, Some(1), true), entry("b", 100, Some(2), true), entry("c", 100, Some(1), true)];
        assert_eq!(agreed(&entries, 2), Some((100, hash(1), "a,c".to_owned())));
        // Three against two at one height: the three, when both reach k.
        let entries = [1, 2, 1, 2, 1].map(|h| entry(&format!("p{h}"), 100, Some(h), true));
        assert_eq!(agreed(&entries, 2), Some((100, hash(1), "p1,p1,p1".to_owned())));
    }

    #[test]
    fn a_tie_or_too_few_matches_moves_down_a_height_or_to_none() {
        let tie = [
            entry("a", 100, Some(1), true),
            entry("b", 100, Some(2), true),
            entry("c", 99, Some(9), true),
            entry("d", 99, Some(9), true),
        ];
        assert_eq!(agreed(&tie, 2), Some((99, hash(9), "c,d".to_owned())));
        let apart =
            [entry("a", 100, Some(1), true), entry("b", 99, Some(2), true), entry("c", 98, Some(3), true)];
        assert_eq!(agreed(&apart, 2), None);
        assert_eq!(agreed(&apart, 1), Some((100, hash(1), "a".to_owned())));
        // A 1–1 tie with k = 1 is still a tie.
        let split = [entry("a", 100, Some(1), true), entry("b", 100, Some(2), true)];
        assert_eq!(agreed(&split, 1), None);
    }

    #[test]
    fn k_is_clipped_to_the_eligible_providers_with_a_hash_so_one_alone_agrees_with_itself() {
        let alone =
            [entry("a", 100, Some(1), true), entry("b", 100, Some(1), false), entry("c", 101, None, true)];
        assert_eq!(agreed(&alone, 2), Some((100, hash(1), "a".to_owned())));
        assert_eq!(agreed(&alone, u32::MAX), Some((100, hash(1), "a".to_owned())));
        let three =
            [entry("a", 100, Some(1), true), entry("b", 100, Some(1), true), entry("c", 100, Some(2), true)];
        assert_eq!(agreed(&three, 3), None, "3 of 3 asked, 2 match");
    }

    #[test]
    fn ineligible_and_hashless_reports_do_not_count() {
        let entries =
            [entry("a", 100, Some(1), true), entry("b", 100, Some(2), true), entry("c", 100, Some(1), false)];
        assert_eq!(agreed(&entries, 2), None);
        assert_eq!(agreed(&[entry("a", 100, None, true)], 2), None);
        assert_eq!(agreed(&[], 2), None);
    }
}
