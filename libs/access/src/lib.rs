//! Who may do what: users with roles per tournament, their passwords and API tokens kept only as
//! slow hashes, and signed, expiring sessions.
//!
//! Pure: no I/O and no wall clock. The services read the users file and pass the time and the
//! randomness in; the decisions here are the same wherever they are made.

pub mod assignment;
pub mod directory;
pub mod policy;
pub mod revocation;
pub mod secret;
pub mod session;

pub use assignment::{
    ArbiterBoards, Assignment, AssignmentError, Assignments, Coverage, MAX_ASSIGNED_BOARDS,
    coverage,
};
pub use directory::{Directory, DirectoryError, TokenRecord, UserRecord, validate_user_name};
pub use policy::{BoardsRuled, Denied, EVERY_TOURNAMENT, Grant, Identity, Operation, Role};
pub use revocation::{Revocations, SessionEnd, session_digest};
pub use secret::CredentialError;
pub use session::{SessionClaims, SessionKey, is_session_token};
