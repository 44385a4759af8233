//! The policy registry: a value mapping names to constructors
//! ([`Registry`]), handed to every driver — the CLI, scenario files,
//! experiments, sweeps and the broker's configuration alike. fairsched's
//! own policies are [`Registry::builtin`]; a researcher's program adds its
//! own with [`Registry::with_order`] and the others.
//!
//! Policies are written `name` or `name[key=value,...]`; [`PolicySpec`]
//! parses and prints that form round-trip. Each entry documents itself and
//! its parameters, so `fairsched policies` and `--help` come from here.
//!
//! Parameters are values, never paths: names, keys and values are tokens
//! of letters, digits, `-`, `.` and `:` (no `/`), and a constructor reads
//! them only as numbers, durations or one of a fixed list of names
//! ([`Params`] hands out nothing else). What kind of policy an entry is,
//! and what it may read (nothing but the views, the users' estimates too,
//! or true runtimes: [`Reads`]), follows from its constructor ([`Ctor`]),
//! so the table cannot say otherwise; the core then builds each policy's
//! views accordingly.

use crate::point::{Allocate, ClairvoyantAllocate, ClairvoyantOrder, Control, Order};
use crate::policy;
use crate::prelude::*;
use crate::scheduler::{AllocatePolicy, ControlPolicy, OrderPolicy};
use crate::time::{MS_PER_SEC, Time};
use alloc::sync::Arc;
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
    #[error("{}", unknown_text(.kind, .name, .elsewhere, .known))]
    Unknown {
        kind: &'static str,
        name: String,
        /// " (formerly fifo) is an order policy" when it names a policy of
        /// another kind.
        elsewhere: String,
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

fn unknown_text(kind: &str, name: &str, elsewhere: &str, known: &str) -> String {
    if elsewhere.is_empty() {
        format!("unknown {kind} policy {name:?}; known: {known}")
    } else {
        let a = if kind.starts_with(['a', 'o']) { "an" } else { "a" };
        format!("{name:?}{elsewhere}, not {a} {kind} policy; {kind} policies: {known}")
    }
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

/// What a policy may read besides the views every policy gets (times,
/// counts, priorities, histories of ended tasks). Declared by its entry,
/// through its constructor ([`Ctor`]), and enforced by the core: the
/// views of a [`Reads::Blind`] policy hold no estimate at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reads {
    /// The views only: no user estimate, no true runtime.
    Blind,
    /// The users' runtime estimates too (SWF field 9, "requested time"):
    /// what a user declared, not what will happen. A live service has
    /// none to give.
    Estimates,
    /// True runtimes, through a [`crate::RuntimeOracle`] (and the
    /// estimates): the clairvoyant baselines, simulation only.
    Oracle,
}

impl Reads {
    pub fn name(self) -> &'static str {
        match self {
            Reads::Blind => "blind",
            Reads::Estimates => "estimates",
            Reads::Oracle => "oracle",
        }
    }
}

/// How an order policy picks among the waiting tasks of a machine, in
/// words for operators (`fairsched explain`); nothing decides by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Picks {
    /// Submission order, priorities ignored.
    Submission,
    /// Highest priority first, then submission order.
    Priority,
    /// It weighs something else too (users, organizations, workflows):
    /// the text says what, completing "it …".
    Weighs(&'static str),
}

/// One documented parameter.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ParamDoc {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
}

/// A policy constructor: a plain function (what built-in policies and
/// most out-of-tree ones use; a closure that captures nothing is one),
/// or a shared closure that keeps what it captured (a binding to another
/// language holds its object there).
pub enum Func<T: ?Sized> {
    Ptr(fn(&Params) -> Result<Box<T>, SpecError>),
    Shared(Arc<SharedFn<T>>),
}

/// A constructor closure.
pub type SharedFn<T> = dyn Fn(&Params) -> Result<Box<T>, SpecError> + Send + Sync;

impl<T: ?Sized> Clone for Func<T> {
    fn clone(&self) -> Self {
        match self {
            Func::Ptr(f) => Func::Ptr(*f),
            Func::Shared(f) => Func::Shared(f.clone()),
        }
    }
}

impl<T: ?Sized> Func<T> {
    /// A shared closure.
    pub fn shared(f: impl Fn(&Params) -> Result<Box<T>, SpecError> + Send + Sync + 'static) -> Func<T> {
        Func::Shared(Arc::new(f))
    }
    fn call(&self, p: &Params) -> Result<Box<T>, SpecError> {
        match self {
            Func::Ptr(f) => f(p),
            Func::Shared(f) => f(p),
        }
    }
}

/// How an entry builds its policy. The variant is the policy's kind and
/// what it reads ([`Reads`]): only the `Clairvoyant*` constructors return
/// policies whose methods receive a [`crate::RuntimeOracle`], and only
/// those and the ones with `estimates: true` get views that show the
/// users' estimates. The table cannot say otherwise.
#[derive(Clone)]
pub enum Ctor {
    Allocate {
        estimates: bool,
        build: Func<dyn Allocate>,
    },
    ClairvoyantAllocate(Func<dyn ClairvoyantAllocate>),
    Order {
        estimates: bool,
        build: Func<dyn Order>,
    },
    ClairvoyantOrder(Func<dyn ClairvoyantOrder>),
    Control {
        estimates: bool,
        build: Func<dyn Control>,
    },
}

impl Ctor {
    /// A blind `Allocate`.
    pub const fn allocate(f: fn(&Params) -> Result<Box<dyn Allocate>, SpecError>) -> Ctor {
        Ctor::Allocate {
            estimates: false,
            build: Func::Ptr(f),
        }
    }
    /// An `Allocate` that reads the users' estimates.
    pub const fn allocate_with_estimates(f: fn(&Params) -> Result<Box<dyn Allocate>, SpecError>) -> Ctor {
        Ctor::Allocate {
            estimates: true,
            build: Func::Ptr(f),
        }
    }
    /// A clairvoyant `Allocate` (simulation only).
    pub const fn clairvoyant_allocate(
        f: fn(&Params) -> Result<Box<dyn ClairvoyantAllocate>, SpecError>,
    ) -> Ctor {
        Ctor::ClairvoyantAllocate(Func::Ptr(f))
    }
    /// A blind `Order`.
    pub const fn order(f: fn(&Params) -> Result<Box<dyn Order>, SpecError>) -> Ctor {
        Ctor::Order {
            estimates: false,
            build: Func::Ptr(f),
        }
    }
    /// An `Order` that reads the users' estimates.
    pub const fn order_with_estimates(f: fn(&Params) -> Result<Box<dyn Order>, SpecError>) -> Ctor {
        Ctor::Order {
            estimates: true,
            build: Func::Ptr(f),
        }
    }
    /// A clairvoyant `Order` (simulation only).
    pub const fn clairvoyant_order(f: fn(&Params) -> Result<Box<dyn ClairvoyantOrder>, SpecError>) -> Ctor {
        Ctor::ClairvoyantOrder(Func::Ptr(f))
    }
    /// A blind `Control`.
    pub const fn control(f: fn(&Params) -> Result<Box<dyn Control>, SpecError>) -> Ctor {
        Ctor::Control {
            estimates: false,
            build: Func::Ptr(f),
        }
    }
    /// A `Control` that reads the users' estimates.
    pub const fn control_with_estimates(f: fn(&Params) -> Result<Box<dyn Control>, SpecError>) -> Ctor {
        Ctor::Control {
            estimates: true,
            build: Func::Ptr(f),
        }
    }
    /// An `Allocate` built by a closure that keeps what it captured (a
    /// counter, another language's object); `estimates`: whether it reads
    /// the users' estimates.
    pub fn shared_allocate(
        estimates: bool,
        f: impl Fn(&Params) -> Result<Box<dyn Allocate>, SpecError> + Send + Sync + 'static,
    ) -> Ctor {
        Ctor::Allocate {
            estimates,
            build: Func::shared(f),
        }
    }
    /// An `Order` built by a closure that keeps what it captured.
    pub fn shared_order(
        estimates: bool,
        f: impl Fn(&Params) -> Result<Box<dyn Order>, SpecError> + Send + Sync + 'static,
    ) -> Ctor {
        Ctor::Order {
            estimates,
            build: Func::shared(f),
        }
    }
    /// A `Control` built by a closure that keeps what it captured.
    pub fn shared_control(
        estimates: bool,
        f: impl Fn(&Params) -> Result<Box<dyn Control>, SpecError> + Send + Sync + 'static,
    ) -> Ctor {
        Ctor::Control {
            estimates,
            build: Func::shared(f),
        }
    }
    /// The extension point.
    pub const fn kind(&self) -> Kind {
        match self {
            Ctor::Allocate { .. } | Ctor::ClairvoyantAllocate(_) => Kind::Allocate,
            Ctor::Order { .. } | Ctor::ClairvoyantOrder(_) => Kind::Order,
            Ctor::Control { .. } => Kind::Control,
        }
    }
    /// What the policy reads.
    pub const fn reads(&self) -> Reads {
        match self {
            Ctor::ClairvoyantAllocate(_) | Ctor::ClairvoyantOrder(_) => Reads::Oracle,
            Ctor::Allocate { estimates: true, .. }
            | Ctor::Order { estimates: true, .. }
            | Ctor::Control { estimates: true, .. } => Reads::Estimates,
            _ => Reads::Blind,
        }
    }
}

/// A registry row.
#[derive(Clone)]
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
    /// Order policies: how it picks, for `explain`.
    pub picks: Picks,
    pub build: Ctor,
}

impl Entry {
    /// An entry with the defaults of an out-of-tree policy: it handles
    /// parallel jobs, does not decide between organizations, and (an
    /// order) picks by priority then submission order as far as
    /// `explain` can tell; change them with the setters below.
    pub fn new(name: &'static str, doc: &'static str, params: &'static [ParamDoc], build: Ctor) -> Entry {
        Entry {
            name,
            doc,
            params,
            parallel: true,
            orgs: false,
            picks: Picks::Priority,
            build,
        }
    }
    /// Whether it handles rigid parallel jobs.
    pub fn parallel(mut self, yes: bool) -> Entry {
        self.parallel = yes;
        self
    }
    /// Whether it decides between organizations.
    pub fn between_orgs(mut self, yes: bool) -> Entry {
        self.orgs = yes;
        self
    }
    /// How it picks, for `explain`.
    pub fn picks(mut self, p: Picks) -> Entry {
        self.picks = p;
        self
    }
    /// The extension point, from the constructor.
    pub const fn kind(&self) -> Kind {
        self.build.kind()
    }
    /// What it reads, from the constructor.
    pub const fn reads(&self) -> Reads {
        self.build.reads()
    }
    /// Reads true runtimes through an oracle (simulation only), from the
    /// constructor.
    pub const fn clairvoyant(&self) -> bool {
        matches!(self.reads(), Reads::Oracle)
    }
}

/// Why an entry cannot join a registry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    #[error("policy {name:?}: the name is taken by the {by}; choose another")]
    Taken { name: String, by: String },
    #[error("policy {name:?}: {reason}")]
    Invalid { name: String, reason: String },
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

/// Every policy fairsched has, in display order: what
/// [`Registry::builtin`] holds.
pub const BUILTIN: &[Entry] = &[
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

/// The policies a driver may build, by name: a value, so that a
/// researcher's program adds its own beside fairsched's
/// ([`Registry::with_order`] and the others) and hands the result to
/// every driver (runs, experiments, sweeps, the live broker).
///
/// A policy added to it takes a name no policy of any kind has, so that
/// a name alone says which extension point it plugs into. (Among
/// fairsched's own, `rand` is both PFFP's random machine and the Shapley
/// paper's RAND: [`Registry::find_in`] looks among the kinds expected.)
///
/// ```
/// use fairsched_core::registry::{Ctor, Registry};
/// use fairsched_core::{MachineId, Order, Pick, SimRng, View, Notice};
///
/// use std::collections::BTreeSet;
///
/// /// Starts the waiting task with the lowest id (a toy, one machine).
/// #[derive(Clone, Default)]
/// struct LowestId(BTreeSet<fairsched_core::TaskId>);
/// impl Order for LowestId {
///     fn notify(&mut self, _: &View, n: &Notice) {
///         match *n {
///             Notice::Queued { task, .. } | Notice::Requeued { task, .. } => { self.0.insert(task); }
///             Notice::Started { task, .. } | Notice::Left { task, .. } => { self.0.remove(&task); }
///             _ => {}
///         }
///     }
///     fn pick(&mut self, _: &View, _: MachineId, _: &mut SimRng) -> Option<Pick> {
///         self.0.first().map(|&t| Pick::Start(t))
///     }
/// }
///
/// let registry = Registry::builtin()
///     .with_order("lowest-id", "the waiting task with the lowest id", &[],
///                 Ctor::order(|_| Ok(Box::new(LowestId::default()))))
///     .unwrap();
/// assert!(registry.build_order(&"lowest-id".parse().unwrap()).is_ok());
/// // A built-in name is refused, with the reason.
/// let e = Registry::builtin()
///     .with_order("fcfs", "", &[], Ctor::order(|_| Ok(Box::new(LowestId::default()))))
///     .unwrap_err();
/// assert!(e.to_string().contains("built-in order policy"), "{e}");
/// ```
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::builtin()
    }
}

impl core::fmt::Debug for Registry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(
                self.entries
                    .iter()
                    .map(|e| (e.kind().name(), e.name, e.reads().name())),
            )
            .finish()
    }
}

impl Registry {
    /// fairsched's own policies ([`BUILTIN`]).
    pub fn builtin() -> Registry {
        Registry {
            entries: BUILTIN.to_vec(),
        }
    }

    /// Adds `entry`: its name must be a token (letters, digits, `-`,
    /// `.`, `:`) that no policy of any kind (nor a former name) has, its
    /// parameters documented tokens, each once.
    pub fn with(mut self, entry: Entry) -> Result<Registry, RegistryError> {
        let invalid = |reason: String| RegistryError::Invalid {
            name: entry.name.to_string(),
            reason,
        };
        if !is_token(entry.name) {
            return Err(invalid(
                "a policy name is letters, digits, '-', '.' or ':' (no '_', '/' or space)".into(),
            ));
        }
        if let Some((old, new)) = ALIASES.iter().find(|(old, _)| *old == entry.name) {
            return Err(RegistryError::Taken {
                name: entry.name.to_string(),
                by: format!("former name {old:?} of the built-in policy {new:?}"),
            });
        }
        if let Some(e) = self.entries.iter().find(|e| e.name == entry.name) {
            let origin = if BUILTIN.iter().any(|b| b.name == e.name) {
                "built-in"
            } else {
                "registered"
            };
            return Err(RegistryError::Taken {
                name: entry.name.to_string(),
                by: format!("{origin} {} policy {:?}", e.kind().name(), e.name),
            });
        }
        for (i, p) in entry.params.iter().enumerate() {
            if !is_token(p.name) {
                return Err(invalid(format!(
                    "parameter {:?}: a name is letters, digits, '-', '.' or ':'",
                    p.name
                )));
            }
            if entry.params[..i].iter().any(|q| q.name == p.name) {
                return Err(invalid(format!("parameter {:?} is listed twice", p.name)));
            }
            if !is_token(p.default) {
                return Err(invalid(format!(
                    "parameter {}: the default {:?} is not a plain token (letters, digits, '-', '.', ':')",
                    p.name, p.default
                )));
            }
        }
        self.entries.push(entry);
        Ok(self)
    }

    fn with_kind(
        self,
        kind: Kind,
        name: &'static str,
        doc: &'static str,
        params: &'static [ParamDoc],
        build: Ctor,
    ) -> Result<Registry, RegistryError> {
        if build.kind() != kind {
            return Err(RegistryError::Invalid {
                name: name.to_string(),
                reason: format!(
                    "registered as {} {} policy with {} {} constructor",
                    article(kind.name()),
                    kind.name(),
                    article(build.kind().name()),
                    build.kind().name()
                ),
            });
        }
        self.with(Entry::new(name, doc, params, build))
    }

    /// Adds an `Allocate` policy (see [`Registry::with`]; [`Entry::new`]'s
    /// defaults).
    pub fn with_allocate(
        self,
        name: &'static str,
        doc: &'static str,
        params: &'static [ParamDoc],
        build: Ctor,
    ) -> Result<Registry, RegistryError> {
        self.with_kind(Kind::Allocate, name, doc, params, build)
    }

    /// Adds an `Order` policy (see [`Registry::with`]; [`Entry::new`]'s
    /// defaults).
    pub fn with_order(
        self,
        name: &'static str,
        doc: &'static str,
        params: &'static [ParamDoc],
        build: Ctor,
    ) -> Result<Registry, RegistryError> {
        self.with_kind(Kind::Order, name, doc, params, build)
    }

    /// Adds a `Control` policy (see [`Registry::with`]).
    pub fn with_control(
        self,
        name: &'static str,
        doc: &'static str,
        params: &'static [ParamDoc],
        build: Ctor,
    ) -> Result<Registry, RegistryError> {
        self.with_kind(Kind::Control, name, doc, params, build)
    }

    /// Every entry, built-in ones first, in display order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries of one kind.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.kind() == kind)
    }

    /// Whether `name` is one of fairsched's own policies.
    pub fn is_builtin(&self, name: &str) -> bool {
        BUILTIN.iter().any(|b| b.name == canonical(name))
    }

    /// The entry named `name` (or a former name of it), whatever its kind
    /// (the first, for a built-in name two kinds share).
    pub fn find(&self, name: &str) -> Option<&Entry> {
        let name = canonical(name);
        self.entries.iter().find(|e| e.name == name)
    }

    /// The entry named `name` among the policies of `kinds`, else of any
    /// kind (to say what it is).
    pub fn find_in(&self, name: &str, kinds: &[Kind]) -> Option<&Entry> {
        let canon = canonical(name);
        self.entries
            .iter()
            .find(|e| e.name == canon && kinds.contains(&e.kind()))
            .or_else(|| self.find(name))
    }

    /// The policy of `kind` named `name`.
    pub fn entry(&self, kind: Kind, name: &str) -> Result<&Entry, SpecError> {
        let canon = canonical(name);
        self.of_kind(kind)
            .find(|e| e.name == canon)
            .ok_or_else(|| SpecError::Unknown {
                kind: kind.name(),
                name: canon.to_string(),
                elsewhere: self
                    .entries
                    .iter()
                    .find(|e| e.name == canon)
                    .map(|e| {
                        // A spec's name is read as the current one: name
                        // the former too, the one the user may have typed.
                        let was: Vec<&str> = ALIASES
                            .iter()
                            .filter(|(_, new)| *new == canon)
                            .map(|(old, _)| *old)
                            .collect();
                        let was = if was.is_empty() {
                            String::new()
                        } else {
                            format!(" (formerly {})", was.join(", "))
                        };
                        let kind = e.kind().name();
                        let a = if kind.starts_with(['a', 'o']) { "an" } else { "a" };
                        format!("{was} is {a} {kind} policy")
                    })
                    .unwrap_or_default(),
                known: self.names(kind).join(", "),
            })
    }

    /// The names of one kind, in display order.
    pub fn names(&self, kind: Kind) -> Vec<&'static str> {
        self.of_kind(kind).map(|e| e.name).collect()
    }

    /// Looks `spec` up as a policy of `kind` and validates its parameter
    /// names; returns the entry and the parameters for its constructor.
    fn lookup<'a>(&self, kind: Kind, spec: &'a PolicySpec) -> Result<(&Entry, Params<'a>), SpecError> {
        let e = self.entry(kind, &spec.name)?;
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

    /// Builds an `Allocate` policy from a spec, with what its entry
    /// declares it reads.
    pub fn build_allocate(&self, spec: &PolicySpec) -> Result<AllocatePolicy, SpecError> {
        let (e, p) = self.lookup(Kind::Allocate, spec)?;
        match &e.build {
            Ctor::Allocate {
                estimates: false,
                build,
            } => build.call(&p).map(AllocatePolicy::Blind),
            Ctor::Allocate {
                estimates: true,
                build,
            } => build.call(&p).map(AllocatePolicy::WithEstimates),
            Ctor::ClairvoyantAllocate(build) => build.call(&p).map(AllocatePolicy::Clairvoyant),
            _ => unreachable!("lookup returns an entry of the kind asked"),
        }
    }

    /// Builds an `Order` policy from a spec, with what its entry declares
    /// it reads.
    pub fn build_order(&self, spec: &PolicySpec) -> Result<OrderPolicy, SpecError> {
        let (e, p) = self.lookup(Kind::Order, spec)?;
        match &e.build {
            Ctor::Order {
                estimates: false,
                build,
            } => build.call(&p).map(OrderPolicy::Blind),
            Ctor::Order {
                estimates: true,
                build,
            } => build.call(&p).map(OrderPolicy::WithEstimates),
            Ctor::ClairvoyantOrder(build) => build.call(&p).map(OrderPolicy::Clairvoyant),
            _ => unreachable!("lookup returns an entry of the kind asked"),
        }
    }

    /// Builds a `Control` policy from a spec, with what its entry declares
    /// it reads.
    pub fn build_control(&self, spec: &PolicySpec) -> Result<ControlPolicy, SpecError> {
        let (e, p) = self.lookup(Kind::Control, spec)?;
        match &e.build {
            Ctor::Control {
                estimates: false,
                build,
            } => build.call(&p).map(ControlPolicy::Blind),
            Ctor::Control {
                estimates: true,
                build,
            } => build.call(&p).map(ControlPolicy::WithEstimates),
            _ => unreachable!("lookup returns an entry of the kind asked"),
        }
    }

    /// Validates `spec` as a policy of `kind` by building it.
    pub fn check(&self, kind: Kind, spec: &PolicySpec) -> Result<&Entry, SpecError> {
        match kind {
            Kind::Allocate => self.build_allocate(spec).map(drop)?,
            Kind::Order => self.build_order(spec).map(drop)?,
            Kind::Control => self.build_control(spec).map(drop)?,
        }
        self.entry(kind, &spec.name)
    }
}

/// `a` or `an` before `word`.
pub fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
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
    fn kind_and_reads_come_from_the_constructor() {
        let r = Registry::builtin();
        for e in r.entries() {
            let spec = e.name.parse().unwrap();
            let built = match e.kind() {
                Kind::Allocate => r.build_allocate(&spec).map(|a| a.reads()),
                Kind::Order => r.build_order(&spec).map(|o| o.reads()),
                Kind::Control => r.build_control(&spec).map(|c| c.reads()),
            };
            assert_eq!(built.unwrap(), e.reads(), "{}", e.name);
        }
        // The built-in policies that read estimates, and the clairvoyant ones.
        let with = |reads: Reads| -> Vec<&str> {
            r.entries()
                .iter()
                .filter(|e| e.reads() == reads)
                .map(|e| e.name)
                .collect()
        };
        assert_eq!(with(Reads::Estimates), ["mst-user", "easy"]);
        assert_eq!(with(Reads::Oracle), ["mst", "ref", "rand"]);
    }

    #[test]
    fn every_registered_policy_builds_with_defaults_and_round_trips() {
        let r = Registry::builtin();
        for e in r.entries() {
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
            r.check(e.kind(), &spec)
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert!(!e.doc.is_empty() && e.params.iter().all(|p| !p.doc.is_empty()));
        }
        // Names are unique per kind; across kinds only `rand` is shared
        // (PFFP's random machine, the Shapley paper's RAND).
        let mut names: Vec<_> = r.entries().iter().map(|e| (e.kind().name(), e.name)).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), r.entries().len(), "duplicate registry names");
        let mut bare: Vec<_> = r.entries().iter().map(|e| e.name).collect();
        bare.sort();
        let shared: Vec<_> = bare.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
        assert_eq!(shared, ["rand"]);
        assert_eq!(r.find_in("rand", &[Kind::Order]).unwrap().kind(), Kind::Order);
        assert_eq!(
            r.find_in("rand", &[Kind::Allocate]).unwrap().kind(),
            Kind::Allocate
        );
        // Every built-in entry but the second `rand` would be accepted by
        // `with` (valid names and parameters).
        let mut again = Registry { entries: Vec::new() };
        for e in BUILTIN {
            if again.find(e.name).is_none() {
                again = again.with(e.clone()).unwrap_or_else(|err| panic!("{err}"));
            }
        }
    }

    #[test]
    fn a_former_name_builds_the_same_policy() {
        let r = Registry::builtin();
        for (old, new) in ALIASES {
            let e = r.entry(Kind::Order, old).unwrap();
            assert_eq!(e.name, *new);
            assert!(
                r.entries().iter().all(|e| e.name != *old),
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
        let r = Registry::builtin();
        let e = r.check(Kind::Order, &"nope".parse().unwrap()).err().unwrap();
        assert!(e.to_string().contains("first-fit"), "{e}");
        // A policy of another kind is named as given, with its kind.
        let e = r.check(Kind::Allocate, &"fifo".parse().unwrap()).err().unwrap();
        assert!(
            e.to_string().starts_with(
                "\"first-fit\" (formerly fifo) is an order policy, not an allocate policy; allocate policies: "
            ),
            "{e}"
        );
        let e = r
            .check(Kind::Control, &"age-boost[afterr=5]".parse().unwrap())
            .err()
            .unwrap();
        assert!(e.to_string().contains("after"), "{e}");
        let e = r
            .check(Kind::Control, &"age-boost[after=soon]".parse().unwrap())
            .err()
            .unwrap();
        assert!(e.to_string().contains("soon"), "{e}");
    }

    #[derive(Clone)]
    struct Nothing;
    impl Order for Nothing {
        fn notify(&mut self, _: &crate::View, _: &crate::Notice) {}
        fn pick(
            &mut self,
            _: &crate::View,
            _: crate::MachineId,
            _: &mut crate::SimRng,
        ) -> Option<crate::Pick> {
            None
        }
    }
    fn nothing(_: &Params) -> Result<Box<dyn Order>, SpecError> {
        Ok(Box::new(Nothing))
    }

    #[test]
    fn out_of_tree_entries_are_checked_and_named() {
        const P: &[ParamDoc] = &[ParamDoc {
            name: "k",
            default: "2",
            doc: "a number",
        }];
        let r = Registry::builtin()
            .with_order("mine", "mine", P, Ctor::order_with_estimates(nothing))
            .unwrap();
        assert_eq!(r.entry(Kind::Order, "mine").unwrap().reads(), Reads::Estimates);
        assert_eq!(r.find("mine").unwrap().kind(), Kind::Order);
        assert!(!r.is_builtin("mine") && r.is_builtin("fifo"));
        // Taken names, of any kind, and former names.
        for (name, by) in [
            ("fcfs", "built-in order policy \"fcfs\""),
            ("age-boost", "built-in control policy"),
            ("fifo", "former name"),
            ("mine", "registered order policy"),
        ] {
            let e = r
                .clone()
                .with_order(name, "", &[], Ctor::order(nothing))
                .unwrap_err();
            assert!(
                matches!(&e, RegistryError::Taken { .. }) && e.to_string().contains(by),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("{name:?}")), "{e}");
        }
        // Bad names, parameters, and a constructor of the wrong kind.
        for (name, params, ctor, why) in [
            ("my_policy", &[][..], Ctor::order(nothing), "'_'"),
            (
                "x",
                &[ParamDoc {
                    name: "a/b",
                    default: "1",
                    doc: "",
                }][..],
                Ctor::order(nothing),
                "parameter",
            ),
            (
                "x",
                &[ParamDoc {
                    name: "a",
                    default: "/etc",
                    doc: "",
                }][..],
                Ctor::order(nothing),
                "default",
            ),
            (
                "x",
                &[][..],
                Ctor::control(|_| unreachable!()),
                "a control constructor",
            ),
        ] {
            let params: &'static [ParamDoc] = Box::leak(params.to_vec().into_boxed_slice());
            let e = Registry::builtin()
                .with_order(name, "", params, ctor)
                .unwrap_err();
            assert!(e.to_string().contains(why), "{e}");
        }
        // A closure keeps what it captured.
        let n = alloc::sync::Arc::new(core::sync::atomic::AtomicUsize::new(0));
        let m = n.clone();
        let r = Registry::builtin()
            .with(Entry::new(
                "counted",
                "counts its builds",
                &[],
                Ctor::Order {
                    estimates: false,
                    build: Func::shared(move |_| {
                        m.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                        Ok(Box::new(Nothing) as Box<dyn Order>)
                    }),
                },
            ))
            .unwrap();
        r.build_order(&"counted".parse().unwrap()).unwrap();
        r.clone().build_order(&"counted".parse().unwrap()).unwrap();
        assert_eq!(n.load(core::sync::atomic::Ordering::Relaxed), 2);
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
