//! Input guardrails: checks that run on every input before anything is stored
//! or seen by the agent.

use crate::error::{CoreError, Result};
use crate::types::{Caller, Message};

/// Checks input before anything is stored or seen by the agent.
pub trait InputGuardrail: Send + Sync + 'static {
    /// `Err(CoreError::DeniedByGuardrail)` refuses the input.
    fn check(&self, caller: &Caller, message: &Message) -> Result<()>;
}

/// An example guardrail: refuses input containing any of the listed phrases
/// (case-insensitive).
#[derive(Clone, Debug)]
pub struct DenyPhrases {
    phrases: Vec<String>,
}

impl DenyPhrases {
    /// A guardrail refusing these phrases.
    pub fn new(phrases: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            phrases: phrases
                .into_iter()
                .map(|p| p.into().to_lowercase())
                .filter(|p| !p.is_empty())
                .collect(),
        }
    }
}

impl InputGuardrail for DenyPhrases {
    fn check(&self, _caller: &Caller, message: &Message) -> Result<()> {
        let text = message.text().to_lowercase();
        match self.phrases.iter().find(|p| text.contains(p.as_str())) {
            Some(p) => Err(CoreError::DeniedByGuardrail {
                reason: format!("input contains a denied phrase ({p:?})"),
            }),
            None => Ok(()),
        }
    }
}
