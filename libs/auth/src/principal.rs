use std::collections::BTreeSet;

use mnemo_domain::{SubjectId, TenantId};

use crate::{AuthError, Scope};

/// Who is calling, as established by a verified token. Handlers take the
/// tenant from here and nowhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub tenant: TenantId,
    /// The `sub` claim: the agent, service or operator acting. 1..=256
    /// characters, no control characters.
    pub actor: String,
    pub scopes: BTreeSet<Scope>,
    /// Set when the token may only touch one subject's memories, e.g. a token
    /// handed to an end-user's client.
    pub subject: Option<SubjectId>,
    /// The `jti` claim, for audit trails.
    pub token_id: Option<String>,
}

impl Principal {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    pub fn require_scope(&self, scope: Scope) -> Result<(), AuthError> {
        if self.has_scope(scope) {
            Ok(())
        } else {
            Err(AuthError::InsufficientScope { required: scope })
        }
    }

    /// Refuses access to `subject` when the token is bound to another one;
    /// an unbound token may act on any subject of its tenant.
    pub fn require_subject(&self, subject: &SubjectId) -> Result<(), AuthError> {
        match &self.subject {
            Some(bound) if bound != subject => Err(AuthError::SubjectForbidden),
            _ => Ok(()),
        }
    }

    pub fn is_subject_bound(&self) -> bool {
        self.subject.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(scopes: &[Scope], subject: Option<&str>) -> Principal {
        Principal {
            tenant: TenantId::parse("acme").unwrap(),
            actor: "agent-1".into(),
            scopes: scopes.iter().copied().collect(),
            subject: subject.map(|s| SubjectId::parse(s).unwrap()),
            token_id: None,
        }
    }

    #[test]
    fn require_scope_checks_membership() {
        let p = principal(&[Scope::MemoriesRead], None);
        assert!(p.require_scope(Scope::MemoriesRead).is_ok());
        let err = p.require_scope(Scope::MemoriesWrite).unwrap_err();
        assert_eq!(
            err,
            AuthError::InsufficientScope {
                required: Scope::MemoriesWrite
            }
        );
        assert!(err.is_forbidden());
        assert!(principal(&[], None)
            .require_scope(Scope::MemoriesRead)
            .is_err());
    }

    #[test]
    fn require_subject_honours_binding() {
        let alice = SubjectId::parse("alice-1").unwrap();
        let bob = SubjectId::parse("bob-2").unwrap();

        let unbound = principal(&[], None);
        assert!(!unbound.is_subject_bound());
        assert!(unbound.require_subject(&alice).is_ok());
        assert!(unbound.require_subject(&bob).is_ok());

        let bound = principal(&[], Some("alice-1"));
        assert!(bound.is_subject_bound());
        assert!(bound.require_subject(&alice).is_ok());
        let err = bound.require_subject(&bob).unwrap_err();
        assert_eq!(err, AuthError::SubjectForbidden);
        assert!(err.is_forbidden());
    }
}
