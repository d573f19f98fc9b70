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

    /// The one check before acting: the token has `scope` and, when the
    /// request is about a subject, may act on that subject. The scope is
    /// checked first, so a token without it learns nothing about bindings.
    pub fn authorize(&self, scope: Scope, subject: Option<&SubjectId>) -> Result<(), AuthError> {
        self.require_scope(scope)?;
        match subject {
            Some(subject) => self.require_subject(subject),
            None => Ok(()),
        }
    }

    /// The subject a query over many subjects may see: the asked one (which
    /// a bound token must match), or the token's own when it is bound and
    /// none is asked; `None` means every subject of the tenant.
    pub fn visible_subject(
        &self,
        asked: Option<SubjectId>,
    ) -> Result<Option<SubjectId>, AuthError> {
        match (asked, &self.subject) {
            (Some(asked), _) => {
                self.require_subject(&asked)?;
                Ok(Some(asked))
            }
            (None, bound) => Ok(bound.clone()),
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

    #[test]
    fn authorize_needs_the_scope_and_the_subject() {
        let alice = SubjectId::parse("alice-1").unwrap();
        let bob = SubjectId::parse("bob-2").unwrap();
        let bound = principal(&[Scope::MemoriesRead], Some("alice-1"));

        assert_eq!(bound.authorize(Scope::MemoriesRead, Some(&alice)), Ok(()));
        assert_eq!(bound.authorize(Scope::MemoriesRead, None), Ok(()));
        assert_eq!(
            bound.authorize(Scope::MemoriesRead, Some(&bob)),
            Err(AuthError::SubjectForbidden)
        );
        assert_eq!(
            bound.authorize(Scope::MemoriesWrite, Some(&alice)),
            Err(AuthError::InsufficientScope {
                required: Scope::MemoriesWrite
            })
        );
        assert_eq!(
            bound.authorize(Scope::MemoriesWrite, None),
            Err(AuthError::InsufficientScope {
                required: Scope::MemoriesWrite
            })
        );

        let unbound = principal(&[Scope::MemoriesRead], None);
        assert_eq!(unbound.authorize(Scope::MemoriesRead, Some(&bob)), Ok(()));
    }

    #[test]
    fn authorize_checks_the_scope_before_the_subject() {
        let bob = SubjectId::parse("bob-2").unwrap();
        let bound = principal(&[], Some("alice-1"));
        assert_eq!(
            bound.authorize(Scope::GdprErase, Some(&bob)),
            Err(AuthError::InsufficientScope {
                required: Scope::GdprErase
            })
        );
    }

    #[test]
    fn visible_subject_narrows_a_bound_token() {
        let alice = SubjectId::parse("alice-1").unwrap();
        let bob = SubjectId::parse("bob-2").unwrap();

        let bound = principal(&[], Some("alice-1"));
        assert_eq!(bound.visible_subject(None), Ok(Some(alice.clone())));
        assert_eq!(
            bound.visible_subject(Some(alice.clone())),
            Ok(Some(alice.clone()))
        );
        assert_eq!(
            bound.visible_subject(Some(bob.clone())),
            Err(AuthError::SubjectForbidden)
        );

        let unbound = principal(&[], None);
        assert_eq!(unbound.visible_subject(None), Ok(None));
        assert_eq!(unbound.visible_subject(Some(bob.clone())), Ok(Some(bob)));
    }
}
