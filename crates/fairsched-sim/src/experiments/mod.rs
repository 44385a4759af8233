//! The papers' experiments, one folder each: the protocol, the paper's
//! numbers to compare against, and the [`crate::Experiment`] that runs it
//! (arguments, plan of instances, typed summary, tables and files).
//! Each takes extra policies (`with`) to run beside the paper's
//! algorithms under the paper's protocol.

pub mod diet;
pub mod pffp;
pub mod shapley;
pub mod workflow;

use crate::SimError;
use fairsched_core::{Kind, PolicySpec, Registry};

/// Checks the policies given to run beside a paper's algorithms
/// (`--with SPEC`): each names a registered policy of `kind`, with valid
/// parameters, and is given once.
pub fn with_specs(
    registry: &Registry,
    kind: Kind,
    specs: &[PolicySpec],
) -> Result<Vec<PolicySpec>, SimError> {
    with_kinds(registry, &[kind], specs).map(|v| v.into_iter().map(|(_, s)| s).collect())
}

/// [`with_specs`] where a policy may be of any of `kinds`; each with its
/// kind.
pub fn with_kinds(
    registry: &Registry,
    kinds: &[Kind],
    specs: &[PolicySpec],
) -> Result<Vec<(Kind, PolicySpec)>, SimError> {
    let names = |k: &Kind| k.name();
    let wanted = kinds.iter().map(names).collect::<Vec<_>>().join(" or ");
    let known = || {
        let names: Vec<&str> = kinds.iter().flat_map(|&k| registry.names(k)).collect();
        names.join(", ")
    };
    let mut out: Vec<(Kind, PolicySpec)> = Vec::new();
    for spec in specs {
        let Some(e) = registry.find_in(&spec.name, kinds) else {
            return Err(SimError::Usage(format!(
                "--with {spec}: no registered policy is named {:?}; {wanted} policies: {}",
                spec.name,
                known()
            )));
        };
        if !kinds.contains(&e.kind()) {
            return Err(SimError::Usage(format!(
                "--with {spec}: {:?} is {} {} policy; this experiment runs {wanted} policies beside its own: {}",
                e.name,
                fairsched_core::registry::article(e.kind().name()),
                e.kind().name(),
                known()
            )));
        }
        registry
            .check(e.kind(), spec)
            .map_err(|err| SimError::Usage(format!("--with {spec}: {err}")))?;
        if out.iter().any(|(_, s)| s == spec) {
            return Err(SimError::Usage(format!("--with {spec}: given twice")));
        }
        out.push((e.kind(), spec.clone()));
    }
    Ok(out)
}
