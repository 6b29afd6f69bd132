//! What a caller may do: the permissions an authenticator grants a request
//! ([`Permissions`]) and what each operation needs ([`Permission`]). A leaf
//! module: the error and the caller types both name it.

/// What an operation needs of its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Read tasks: get, list, subscribe, resubscribe, events, the extended card,
    /// CAS polls.
    Read,
    /// Change tasks: send, answer, cancel, push configs, host actions. Implies
    /// [`Permission::Read`].
    Write,
}

impl Permission {
    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The permissions a request was granted (from its token's scopes, say).
/// Write implies read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permissions {
    read: bool,
    write: bool,
}

impl Default for Permissions {
    fn default() -> Self {
        Self::ALL
    }
}

impl Permissions {
    /// Everything (no authentication, a token-file token).
    pub const ALL: Permissions = Permissions {
        read: true,
        write: true,
    };
    /// Nothing (an authenticated token that carries none of the scopes).
    pub const NONE: Permissions = Permissions {
        read: false,
        write: false,
    };
    /// Read only.
    pub const READ: Permissions = Permissions {
        read: true,
        write: false,
    };

    /// From the two grants (write implies read).
    pub const fn new(read: bool, write: bool) -> Self {
        Self {
            read: read || write,
            write,
        }
    }

    /// Whether an operation needing `p` is allowed.
    pub const fn allows(self, p: Permission) -> bool {
        match p {
            Permission::Read => self.read,
            Permission::Write => self.write,
        }
    }
}
