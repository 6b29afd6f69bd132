//! The transition table. Every state change of every task is checked here.

use crate::error::CoreError;
use crate::types::TaskState;

use TaskState::*;

/// The legal edges, as (from, to). A state not listed as a `from` has no exits.
pub const TRANSITIONS: &[(TaskState, TaskState)] = &[
    // A worker picks the task up, or it ends before any turn ran.
    (Submitted, Working),
    (Submitted, Canceled),
    (Submitted, Failed),
    (Submitted, Rejected),
    // A turn ends.
    (Working, InputRequired),
    (Working, AuthRequired),
    (Working, Completed),
    (Working, Failed),
    (Working, Canceled),
    (Working, Rejected),
    // Waiting for the user: answers resume it, a decision may end it.
    (InputRequired, Working),
    (InputRequired, AuthRequired),
    (InputRequired, Canceled),
    (InputRequired, Failed),
    (InputRequired, Rejected),
    // Waiting for an authorisation.
    (AuthRequired, Working),
    (AuthRequired, InputRequired),
    (AuthRequired, Canceled),
    (AuthRequired, Failed),
    (AuthRequired, Rejected),
];

/// True if `from -> to` is a legal edge.
pub fn is_allowed(from: TaskState, to: TaskState) -> bool {
    TRANSITIONS.iter().any(|&(f, t)| f == from && t == to)
}

/// Checks an edge, returning the typed error the core reports for an illegal one.
pub fn check(from: TaskState, to: TaskState) -> Result<(), CoreError> {
    if from.is_terminal() {
        return Err(CoreError::Terminal { state: from });
    }
    if is_allowed(from, to) {
        Ok(())
    } else {
        Err(CoreError::IllegalTransition { from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_edge_leaves_a_terminal_state() {
        for from in TaskState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for to in TaskState::ALL {
                assert!(!is_allowed(from, to), "{from} -> {to} must be illegal");
                assert!(
                    matches!(check(from, to), Err(CoreError::Terminal { state }) if state == from),
                    "{from} -> {to}"
                );
            }
        }
    }

    #[test]
    fn every_illegal_edge_is_refused() {
        let mut illegal = 0;
        for from in TaskState::ALL {
            for to in TaskState::ALL {
                let listed = TRANSITIONS.contains(&(from, to));
                assert_eq!(is_allowed(from, to), listed);
                if !listed {
                    illegal += 1;
                    assert!(check(from, to).is_err(), "{from} -> {to} must be refused");
                } else {
                    assert!(check(from, to).is_ok(), "{from} -> {to} must be allowed");
                }
            }
        }
        // 64 ordered pairs, 20 legal edges.
        assert_eq!(illegal, 64 - 20);
    }

    #[test]
    fn specific_illegal_edges() {
        for (from, to) in [
            (Submitted, Submitted),
            (Submitted, Completed),
            (Submitted, InputRequired),
            (Working, Working),
            (Working, Submitted),
            (InputRequired, Completed),
            (InputRequired, Submitted),
            (AuthRequired, Completed),
            (AuthRequired, AuthRequired),
        ] {
            assert!(
                matches!(check(from, to), Err(CoreError::IllegalTransition { .. })),
                "{from} -> {to}"
            );
        }
    }

    #[test]
    fn every_non_terminal_state_can_be_canceled_and_failed() {
        for from in TaskState::ALL.into_iter().filter(|s| !s.is_terminal()) {
            assert!(is_allowed(from, Canceled));
            assert!(is_allowed(from, Failed));
        }
    }
}
