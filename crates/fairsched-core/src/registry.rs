//! The policy registry: one table mapping names to constructors, used by
//! the CLI, scenario files and the broker's configuration alike.
//!
//! Policies are written `name` or `name[key=value,...]`; [`PolicySpec`]
//! parses and prints that form round-trip. Each entry documents itself and
//! its parameters, so `fairsched policies` and `--help` come from here.
//!
//! Parameters are values, never paths: names, keys and values are tokens
//! of letters, digits, `-`, `.` and `:` (no `/`), and a constructor reads
//! them only as numbers, durations or one of a fixed list of names
//! ([`Params`] hands out nothing else). What kind of policy an entry is,
//! and whether it reads runtimes, follows from its constructor's type
//! ([`Ctor`]), so the table cannot say otherwise.

use crate::point::{Allocate, ClairvoyantAllocate, ClairvoyantOrder, Control, Order};
use crate::policy;
use crate::prelude::*;
use crate::scheduler::{AllocatePolicy, OrderPolicy};
use crate::time::{MS_PER_SEC, Time};
use core::fmt;
use core::str::FromStr;
use serde::{Deserialize, Serialize};

/// A policy name with its parameters, as written by a user.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PolicySpec {
    pub name: String,
    /// Parameters in the order written.
    pub params: Vec<(String, String)>,
}

/// A malformed spec, an unknown policy or a bad parameter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("malformed policy spec {spec:?}: {reason}")]
    Syntax { spec: String, reason: String },
    #[error("unknown {kind} policy {name:?}; known: {known}")]
    Unknown {
        kind: &'static str,
        name: String,
        known: String,
    },
    #[error("policy {policy}: unknown parameter {key:?}; it takes: {allowed}")]
    UnknownParam {
        policy: String,
        key: String,
        allowed: String,
    },
    #[error("policy {policy}: parameter {key}={value:?}: {reason}")]
    BadValue {
        policy: String,
        key: String,
        value: String,
        reason: String,
    },
}

/// Letters, digits, `-`, `.`, `:`. No `/` (a value is never a path) and no
/// `_` (the separator of [`PolicySpec::slug`]).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':'))
}

impl FromStr for PolicySpec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let syntax = |reason: &str| SpecError::Syntax {
            spec: s.to_string(),
            reason: reason.to_string(),
        };
        let s_trim = s.trim();
        let (name, rest) = match s_trim.find('[') {
            Some(i) => (&s_trim[..i], Some(&s_trim[i + 1..])),
            None => (s_trim, None),
        };
        if !is_token(name) {
            return Err(syntax("the name must be letters, digits, '-', '.' or ':'"));
        }
        let mut params = Vec::new();
        if let Some(rest) = rest {
            let inner = rest
                .strip_suffix(']')
                .ok_or_else(|| syntax("missing closing ']'"))?;
            if inner.contains(['[', ']']) {
                return Err(syntax("nested brackets"));
            }
            for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, v) = part
                    .split_once('=')
                    .ok_or_else(|| syntax("parameters are key=value"))?;
                let (k, v) = (k.trim(), v.trim());
                if !is_token(k) || !is_token(v) {
                    return Err(syntax(
                        "keys and values are plain tokens of letters, digits, '-', '.' and ':' \
                         (numbers, durations, names; never paths)",
                    ));
                }
                if params.iter().any(|(pk, _)| pk == k) {
                    return Err(syntax(&format!("parameter {k} given twice")));
                }
                params.push((k.to_string(), v.to_string()));
            }
        }
        Ok(PolicySpec {
            // A former name reads as the current one: outputs, folders and
            // snapshots then name one policy one way.
            name: canonical(name).to_string(),
            params,
        })
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.params.is_empty() {
            f.write_str("[")?;
            for (i, (k, v)) in self.params.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{k}={v}")?;
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

impl PolicySpec {
    /// A file name for this spec, one to one: `age-boost[after=600,by=2]`
    /// → `age-boost_after=600_by=2` (tokens never contain `_`, so distinct
    /// specs never share a slug).
    pub fn slug(&self) -> String {
        let mut s = self.name.clone();
        for (k, v) in &self.params {
            s.push('_');
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }
}

impl TryFrom<String> for PolicySpec {
    type Error = SpecError;
    fn try_from(s: String) -> Result<Self, SpecError> {
        s.parse()
    }
}
impl From<PolicySpec> for String {
    fn from(p: PolicySpec) -> String {
        p.to_string()
    }
}

/// The extension point a policy plugs into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Allocate,
    Order,
    Control,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Allocate => "allocate",
            Kind::Order => "order",
            Kind::Control => "control",
        }
    }
}

/// One documented parameter.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ParamDoc {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
}

/// How an entry builds its policy. The variant is the policy's kind and
/// says whether it reads runtimes: only the `Clairvoyant*` constructors
/// return policies whose methods receive a [`crate::RuntimeOracle`].
#[derive(Clone, Copy)]
pub enum Ctor {
    Allocate(fn(&Params) -> Result<Box<dyn Allocate>, SpecError>),
    ClairvoyantAllocate(fn(&Params) -> Result<Box<dyn ClairvoyantAllocate>, SpecError>),
    Order(fn(&Params) -> Result<Box<dyn Order>, SpecError>),
    ClairvoyantOrder(fn(&Params) -> Result<Box<dyn ClairvoyantOrder>, SpecError>),
    Control(fn(&Params) -> Result<Box<dyn Control>, SpecError>),
}

/// A registry row.
#[derive(Clone, Copy)]
pub struct Entry {
    pub name: &'static str,
    /// One line.
    pub doc: &'static str,
    pub params: &'static [ParamDoc],
    /// Handles rigid parallel jobs (tasks needing more than one slot).
    pub parallel: bool,
    /// Decides between organizations (shares, contributions, turns): with
    /// a single organization it is a plain queue.
    pub orgs: bool,
    pub build: Ctor,
}

impl Entry {
    /// The extension point, from the constructor.
    pub const fn kind(&self) -> Kind {
        match self.build {
            Ctor::Allocate(_) | Ctor::ClairvoyantAllocate(_) => Kind::Allocate,
            Ctor::Order(_) | Ctor::ClairvoyantOrder(_) => Kind::Order,
            Ctor::Control(_) => Kind::Control,
        }
    }
    /// Reads true runtimes through an oracle (simulation only), from the
    /// constructor.
    pub const fn clairvoyant(&self) -> bool {
        matches!(
            self.build,
            Ctor::ClairvoyantAllocate(_) | Ctor::ClairvoyantOrder(_)
        )
    }
}

/// Validated parameters handed to a constructor.
pub struct Params<'a> {
    policy: &'a str,
    values: &'a [(String, String)],
    docs: &'static [ParamDoc],
}

impl Params<'_> {
    fn raw(&self, key: &str) -> &str {
        let doc = self
            .docs
            .iter()
            .find(|d| d.name == key)
            .expect("constructor reads a documented parameter");
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map_or(doc.default, |(_, v)| v.as_str())
    }
    fn bad(&self, key: &str, value: &str, reason: &str) -> SpecError {
        SpecError::BadValue {
            policy: self.policy.to_string(),
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }
    pub fn f64(&self, key: &str) -> Result<f64, SpecError> {
        let v = self.raw(key);
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.bad(key, v, "expected a number"))
    }
    pub fn i64(&self, key: &str) -> Result<i64, SpecError> {
        let v = self.raw(key);
        v.parse().map_err(|_| self.bad(key, v, "expected an integer"))
    }
    pub fn u64(&self, key: &str) -> Result<u64, SpecError> {
        let v = self.raw(key);
        v.parse()
            .map_err(|_| self.bad(key, v, "expected a non-negative integer"))
    }
    /// A duration: seconds, with an optional unit suffix `ms`, `s`, `m`, `h`.
    pub fn duration(&self, key: &str) -> Result<Time, SpecError> {
        let v = self.raw(key);
        parse_duration(v)
            .ok_or_else(|| self.bad(key, v, "expected a duration like 600, 600s, 10m, 1.5h or 250ms"))
    }
    pub fn choice(&self, key: &str, options: &[&'static str]) -> Result<&'static str, SpecError> {
        let v = self.raw(key);
        options
            .iter()
            .find(|o| **o == v)
            .copied()
            .ok_or_else(|| self.bad(key, v, &format!("expected one of {}", options.join(", "))))
    }
}

/// Parses `600`, `600s`, `10m`, `1.5h`, `250ms` into a [`Time`].
pub fn parse_duration(v: &str) -> Option<Time> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, MS_PER_SEC as f64)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0 * MS_PER_SEC as f64)
    } else if let Some(n) = v.strip_suffix('h') {
        (n, 3600.0 * MS_PER_SEC as f64)
    } else {
        (v, MS_PER_SEC as f64)
    };
    let x: f64 = num.parse().ok()?;
    (x.is_finite() && x >= 0.0 && x * scale < i64::MAX as f64).then(|| Time(libm::round(x * scale) as i64))
}

/// Every policy fairsched knows, in display order.
pub const REGISTRY: &[Entry] = &[
    policy::single_pool::ENTRY,
    policy::least_loaded::ENTRY,
    policy::pffp::rand_machine::ENTRY,
    policy::pffp::mlp::ENTRY,
    policy::pffp::mst::ENTRY,
    policy::pffp::mst_user::ENTRY,
    policy::pffp::predictor::ENTRY,
    policy::pffp::predictor::ENTRY_PFFP1,
    policy::pffp::predictor::ENTRY_PFFP2,
    policy::fifo::ENTRY,
    policy::fcfs::ENTRY,
    policy::easy::ENTRY,
    policy::priority::ENTRY,
    policy::round_robin::ENTRY,
    policy::fair_share::ENTRY,
    policy::workflow_fairness::FCFS_ENTRY,
    policy::diet_ethic::ENTRY,
    policy::shapley::reference::ENTRY,
    policy::shapley::rand::ENTRY,
    policy::shapley::direct_contr::ENTRY,
    policy::shapley::ut_fair_share::ENTRY,
    policy::shapley::curr_fair_share::ENTRY,
    policy::age_boost::ENTRY,
    policy::workflow_fairness::ENTRY,
];

/// Former names still accepted, `(old, current)`: a spec, a script or a
/// broker database written with the old name keeps working.
pub const ALIASES: &[(&str, &str)] = &[("fifo", policy::fifo::NAME)];

/// The current name for `name` (itself unless it is an alias).
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new)
}

pub fn entry(kind: Kind, name: &str) -> Result<&'static Entry, SpecError> {
    let name = canonical(name);
    REGISTRY
        .iter()
        .find(|e| e.kind() == kind && e.name == name)
        .ok_or_else(|| SpecError::Unknown {
            kind: kind.name(),
            name: name.to_string(),
            known: REGISTRY
                .iter()
                .filter(|e| e.kind() == kind)
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Looks `spec` up as a policy of `kind` and validates its parameter
/// names; returns the entry and the parameters for its constructor.
fn lookup<'a>(kind: Kind, spec: &'a PolicySpec) -> Result<(&'static Entry, Params<'a>), SpecError> {
    let e = entry(kind, &spec.name)?;
    for (k, _) in &spec.params {
        if !e.params.iter().any(|d| d.name == k) {
            let allowed = e.params.iter().map(|d| d.name).collect::<Vec<_>>();
            return Err(SpecError::UnknownParam {
                policy: spec.name.clone(),
                key: k.clone(),
                allowed: if allowed.is_empty() {
                    "no parameters".into()
                } else {
                    allowed.join(", ")
                },
            });
        }
    }
    let params = Params {
        policy: e.name,
        values: &spec.params,
        docs: e.params,
    };
    Ok((e, params))
}

/// Builds an `Allocate` policy from a spec.
pub fn build_allocate(spec: &PolicySpec) -> Result<AllocatePolicy, SpecError> {
    let (e, p) = lookup(Kind::Allocate, spec)?;
    match e.build {
        Ctor::Allocate(f) => f(&p).map(AllocatePolicy::Blind),
        Ctor::ClairvoyantAllocate(f) => f(&p).map(AllocatePolicy::Clairvoyant),
        _ => unreachable!("lookup returns an entry of the kind asked"),
    }
}

/// Builds an `Order` policy from a spec.
pub fn build_order(spec: &PolicySpec) -> Result<OrderPolicy, SpecError> {
    let (e, p) = lookup(Kind::Order, spec)?;
    match e.build {
        Ctor::Order(f) => f(&p).map(OrderPolicy::Blind),
        Ctor::ClairvoyantOrder(f) => f(&p).map(OrderPolicy::Clairvoyant),
        _ => unreachable!("lookup returns an entry of the kind asked"),
    }
}

/// Builds a `Control` policy from a spec.
pub fn build_control(spec: &PolicySpec) -> Result<Box<dyn Control>, SpecError> {
    let (e, p) = lookup(Kind::Control, spec)?;
    match e.build {
        Ctor::Control(f) => f(&p),
        _ => unreachable!("lookup returns an entry of the kind asked"),
    }
}

/// Validates `spec` as a policy of `kind` by building it.
pub fn check(kind: Kind, spec: &PolicySpec) -> Result<&'static Entry, SpecError> {
    match kind {
        Kind::Allocate => build_allocate(spec).map(drop)?,
        Kind::Order => build_order(spec).map(drop)?,
        Kind::Control => build_control(spec).map(drop)?,
    }
    entry(kind, &spec.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip() {
        for s in ["first-fit", "age-boost[after=600]", "x[a=1,b=2.5,c=zipf:1,d=-3]"] {
            let p: PolicySpec = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
            assert_eq!(p.to_string().parse::<PolicySpec>().unwrap(), p);
        }
        let p: PolicySpec = " age-boost[ after = 10m , by=2 ] ".parse().unwrap();
        assert_eq!(p.to_string(), "age-boost[after=10m,by=2]");
    }

    #[test]
    fn bad_specs_are_errors() {
        for s in [
            "",
            "fifo[",
            "fifo[a]",
            "fifo[a=1,a=2]",
            "fi fo",
            "a[b=[c]]",
            "a[=1]",
            // Values are never paths (nor the slug separator).
            "x[file=/etc/passwd]",
            "x[file=../trace.swf]",
            "x[a=b_c]",
            "x/y",
        ] {
            assert!(s.parse::<PolicySpec>().is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn slugs_are_one_to_one() {
        let specs = [
            "age-boost[after=600,by=2]",
            "age-boost[after=600]",
            "age-boost[by=2,after=600]",
            "x[a=1-2]",
            "x[a=1,b=2]",
            "x-a[b=1]",
            "x[a-b=1]",
            "x[a=zipf:1]",
            "x[a=zipf-1]",
            "fifo",
        ];
        let slugs: Vec<String> = specs
            .iter()
            .map(|s| s.parse::<PolicySpec>().unwrap().slug())
            .collect();
        assert_eq!(slugs[0], "age-boost_after=600_by=2");
        let mut unique = slugs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), slugs.len(), "{slugs:?}");
    }

    #[test]
    fn kind_and_clairvoyance_come_from_the_constructor() {
        for e in REGISTRY {
            let built = match e.kind() {
                Kind::Allocate => build_allocate(&e.name.parse().unwrap()).map(|a| a.is_clairvoyant()),
                Kind::Order => build_order(&e.name.parse().unwrap()).map(|o| o.is_clairvoyant()),
                Kind::Control => build_control(&e.name.parse().unwrap()).map(|_| false),
            };
            assert_eq!(built.unwrap(), e.clairvoyant(), "{}", e.name);
        }
    }

    #[test]
    fn every_registered_policy_builds_with_defaults_and_round_trips() {
        for e in REGISTRY {
            let spec = PolicySpec {
                name: e.name.to_string(),
                params: e
                    .params
                    .iter()
                    .map(|p| (p.name.to_string(), p.default.to_string()))
                    .collect(),
            };
            let again: PolicySpec = spec.to_string().parse().unwrap();
            assert_eq!(again, spec);
            check(e.kind(), &spec).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert!(!e.doc.is_empty() && e.params.iter().all(|p| !p.doc.is_empty()));
        }
        let mut names: Vec<_> = REGISTRY.iter().map(|e| (e.kind().name(), e.name)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len(), "duplicate registry names");
    }

    #[test]
    fn a_former_name_builds_the_same_policy() {
        for (old, new) in ALIASES {
            let e = entry(Kind::Order, old).unwrap();
            assert_eq!(e.name, *new);
            assert!(
                REGISTRY.iter().all(|e| e.name != *old),
                "{old} is both a name and an alias"
            );
        }
        assert_eq!(canonical("fifo"), "first-fit");
        let p: PolicySpec = "fifo".parse().unwrap();
        assert_eq!(p.to_string(), "first-fit");
        assert_eq!(canonical("fcfs"), "fcfs");
    }

    #[test]
    fn unknown_names_and_params_are_reported() {
        let e = check(Kind::Order, &"nope".parse().unwrap()).err().unwrap();
        assert!(e.to_string().contains("first-fit"), "{e}");
        let e = check(Kind::Control, &"age-boost[afterr=5]".parse().unwrap())
            .err()
            .unwrap();
        assert!(e.to_string().contains("after"), "{e}");
        let e = check(Kind::Control, &"age-boost[after=soon]".parse().unwrap())
            .err()
            .unwrap();
        assert!(e.to_string().contains("soon"), "{e}");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("600"), Some(Time::from_secs(600)));
        assert_eq!(parse_duration("10m"), Some(Time::from_secs(600)));
        assert_eq!(parse_duration("1.5h"), Some(Time::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Some(Time(250)));
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("x"), None);
    }
}
