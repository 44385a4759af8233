//! Platforms set up by hand: `fairsched simulate --platform FILE`.
//!
//! A TOML file declares the organizations in index order (organization 0
//! first), the processors each owns and the SWF users (field 12) whose jobs
//! belong to it:
//!
//! ```toml
//! # What to do with users listed nowhere: "error" (the default), "random",
//! # or the name of an organization. A top-level key: it must come before
//! # the first [[org]] (in TOML a key after a table header belongs to that table).
//! unlisted = "random"
//!
//! # Organizations in index order (organization 0 first).
//! [[org]]
//! name = "lpc"          # optional, default "org<i>"
//! procs = 40            # processors it owns (≥ 0); the total must be ≥ 1
//! users = [12, 15, 20]  # SWF user ids (field 12) whose jobs belong to it; default []
//!
//! [[org]]
//! name = "cern"
//! procs = 30
//! users = [3]
//! ```
//!
//! `unlisted` says what happens to a job whose user no organization lists:
//! - `"error"` (default): the run stops at the first such job, naming the
//!   job and the user;
//! - `"random"`: the user is mapped to an organization uniformly at random,
//!   seeded, exactly as `--orgs` maps every user;
//! - the name of an organization: the job goes to that organization.
//!
//! Names must be unique (a default name `org<i>` counts), non-empty, and
//! neither `error` nor `random`. A user may be listed by one organization
//! only. The processors of the run are the organizations' total: one machine
//! of that size, or `--machines` sizes that add up to it.
//!
//! Every mistake is reported as ``FILE:LINE: key `KEY`: what was wrong``,
//! e.g. ``platform.toml:7: key `org[1].procs`: expected a processor count ≥ 0,
//! found -3``; nothing here panics on user input.
//!
//! ```
//! use fairsched_sim::platform_file::{PlatformFile, Unlisted};
//! use std::path::Path;
//!
//! let text = r#"
//! unlisted = "cern"
//!
//! [[org]]
//! name = "lpc"
//! procs = 40
//! users = [12, 15, 20]
//!
//! [[org]]
//! name = "cern"
//! procs = 30
//! users = [3]
//! "#;
//! let file = PlatformFile::parse(Path::new("platform.toml"), text).unwrap();
//! assert_eq!(file.procs(), [40, 30]);
//! assert_eq!(file.unlisted, Unlisted::Org(1));
//! assert_eq!((file.org_of(15), file.org_of(3), file.org_of(7)), (Some(0), Some(1), None));
//! assert_eq!(file.mapper(0).org_of(7), Ok(1));
//!
//! let err = PlatformFile::parse(Path::new("platform.toml"), "[[org]]\nprocs = -3\n").unwrap_err();
//! assert_eq!(err.to_string(), "platform.toml:2: key `org[0].procs`: expected a processor count ≥ 0, found -3");
//! ```

use crate::errors::SimError;
use fairsched_trace::UserOrgMap;
use fairsched_trace::toml_key::{key_path, line_of};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;
use toml::de::DeTable;

/// A platform read from a TOML file (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct PlatformFile {
    /// The file it was read from (messages name it).
    pub path: PathBuf,
    /// The organizations, in index order.
    pub orgs: Vec<OrgDecl>,
    /// What happens to jobs of users no organization lists.
    pub unlisted: Unlisted,
}

/// One organization of a [`PlatformFile`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrgDecl {
    /// Its name (`org<i>` when the file gives none).
    pub name: String,
    /// Processors it owns.
    pub procs: u32,
    /// SWF user ids (field 12) whose jobs belong to it.
    pub users: Vec<i64>,
}

/// What happens to a job whose user no organization lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Unlisted {
    /// The run stops with an error naming the job and the user.
    #[default]
    Error,
    /// Seeded uniform mapping over every organization (those owning no
    /// processor too), as `--orgs` does.
    Random,
    /// Every such job goes to this organization (an index into `orgs`).
    Org(u32),
}

/// Reserved words of `unlisted`: no organization may be named so.
const RESERVED: [&str; 2] = ["error", "random"];

/// The file's shape, for serde; spans locate each mistake.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    org: Option<Spanned<Vec<Spanned<RawOrg>>>>,
    #[serde(default)]
    unlisted: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOrg {
    #[serde(default)]
    name: Option<Spanned<String>>,
    procs: Spanned<i64>,
    #[serde(default)]
    users: Vec<Spanned<i64>>,
}

/// Turns byte offsets into ``FILE:LINE: key `KEY` `` prefixes.
pub(crate) struct Locator<'a> {
    pub(crate) file: String,
    pub(crate) text: &'a str,
    /// The document's structure with spans, when it parses.
    pub(crate) root: Option<DeTable<'a>>,
}

/// The byte offset of the outermost `[` or `{` of a value still open at
/// `pos` (table headers, strings and comments skipped), if any.
fn unclosed_before(text: &str, pos: usize) -> Option<usize> {
    let mut open: Vec<usize> = Vec::new();
    let mut line_start = true;
    let mut it = text.get(..pos)?.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        match c {
            '\n' => {
                line_start = true;
                continue;
            }
            ' ' | '\t' | '\r' => continue,
            '#' => while it.next_if(|&(_, c)| c != '\n').is_some() {},
            // A table header: the line is a header, not a value.
            '[' if line_start && open.is_empty() => while it.next_if(|&(_, c)| c != '\n').is_some() {},
            '"' | '\'' => {
                while let Some((_, d)) = it.next() {
                    if d == '\\' && c == '"' {
                        it.next();
                    } else if d == c || d == '\n' {
                        break;
                    }
                }
            }
            '[' | '{' => open.push(i),
            ']' | '}' => {
                open.pop();
            }
            _ => {}
        }
        line_start = false;
    }
    open.first().copied()
}

impl<'a> Locator<'a> {
    /// Parses `text` as TOML into `T`, keeping the document's spans so
    /// later checks can locate their mistakes; messages name `path`.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(
        path: &Path,
        text: &'a str,
    ) -> Result<(Locator<'a>, T), SimError> {
        let mut loc = Locator {
            file: path.display().to_string(),
            text,
            root: None,
        };
        let root = DeTable::parse(text).map_err(|e| loc.toml_error(&e, "invalid TOML: "))?;
        loc.root = Some(root.into_inner());
        let de = toml::de::Deserializer::parse(text).map_err(|e| loc.toml_error(&e, "invalid TOML: "))?;
        let raw = T::deserialize(de).map_err(|e| loc.toml_error(&e, ""))?;
        Ok((loc, raw))
    }

    fn line(&self, pos: usize) -> usize {
        line_of(self.text, pos)
    }

    /// The innermost key (`org[1].procs`) whose key or value holds `pos`.
    fn key_at(&self, pos: usize) -> Option<String> {
        key_path(self.root.as_ref()?, pos)
    }

    /// `FILE:LINE: key `KEY`: MESSAGE` for a mistake at `span`.
    pub(crate) fn error(&self, span: Range<usize>, msg: impl std::fmt::Display) -> SimError {
        let line = self.line(span.start);
        let key = self.key_at(span.start);
        self.error_at(line, key.as_deref(), msg)
    }

    pub(crate) fn error_at(&self, line: usize, key: Option<&str>, msg: impl std::fmt::Display) -> SimError {
        let mut s = format!("{}:{line}: ", self.file);
        if let Some(k) = key {
            let _ = write!(s, "key `{k}`: ");
        }
        let _ = write!(s, "{msg}");
        SimError::Config(s)
    }

    /// A TOML or serde error, located, with a hint for the usual mistakes.
    pub(crate) fn toml_error(&self, e: &toml::de::Error, what: &str) -> SimError {
        let raw = e.message().trim_end();
        let msg = match raw
            .strip_prefix("invalid type: integer `")
            .and_then(|r| r.split_once("` as i128"))
        {
            // An integer too large for i64.
            Some((n, _)) => format!("the integer {n} is out of range"),
            None => raw.replace("expected i64", "expected an integer"),
        };
        let Some(span) = e.span() else {
            return self.error_at(1, None, format_args!("{what}{msg}"));
        };
        // An array or inline table left open is reported where the parser
        // gives up, lines later: name the line that opened it.
        if let Some(open) = unclosed_before(self.text, span.start)
            && self.line(open) < self.line(span.start)
        {
            let key = self.key_on_line(open);
            return self.error_at(
                self.line(open),
                key.as_deref(),
                format_args!(
                    "{what}the `{}` opened here is not closed (the parser stopped at line {}: {msg})",
                    &self.text[open..open + 1],
                    self.line(span.start)
                ),
            );
        }
        let key = self.key_at(span.start).or_else(|| self.key_on_line(span.start));
        let hint = match key.as_deref() {
            Some(k) if k.starts_with("org[") && k.ends_with(".unlisted") => {
                "; `unlisted` is a top-level key, but after an [[org]] header it belongs to that \
                 organization: move it above the first [[org]]"
            }
            Some("org") if msg.starts_with("invalid type") => {
                "; write each organization as an [[org]] table (an array of tables)"
            }
            _ => "",
        };
        self.error_at(
            self.line(span.start),
            key.as_deref(),
            format_args!("{what}{msg}{hint}"),
        )
    }

    /// For a syntax error (no structure to walk): the bare key that starts
    /// the error's line, under the last table header above it.
    fn key_on_line(&self, pos: usize) -> Option<String> {
        let start = self.text.get(..pos)?.rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next().unwrap_or("");
        let (key, _) = line.split_once('=')?;
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return None;
        }
        // The last `[[org]]` header above: count them to give the index.
        let above = &self.text[..start];
        let mut prefix = None;
        let mut count: std::collections::HashMap<&str, usize> = Default::default();
        for l in above.lines().map(str::trim) {
            if let Some(h) = l
                .strip_prefix("[[")
                .and_then(|l| l.split_once("]]"))
                .map(|(h, _)| h.trim())
            {
                let n = count.entry(h).or_insert(0);
                prefix = Some(format!("{h}[{n}]"));
                *n += 1;
            } else if let Some(h) = l
                .strip_prefix('[')
                .and_then(|l| l.split_once(']'))
                .map(|(h, _)| h.trim())
                && !h.is_empty()
                && h.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                prefix = Some(h.to_string());
            }
        }
        Some(match prefix {
            Some(p) => format!("{p}.{key}"),
            None => key.to_string(),
        })
    }
}

impl PlatformFile {
    /// Reads and checks `path` (see the [module docs](self) for the format).
    pub fn load(path: &Path) -> Result<PlatformFile, SimError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SimError::Config(format!("{}: {e}", path.display())))?;
        PlatformFile::parse(path, &text)
    }

    /// Parses and checks `text`; messages name `path_for_messages`.
    pub fn parse(path_for_messages: &Path, text: &str) -> Result<PlatformFile, SimError> {
        let (loc, raw) = Locator::parse::<RawFile>(path_for_messages, text)?;

        let Some(org_list) = raw.org else {
            return Err(loc.error_at(
                1,
                Some("org"),
                "no organization: declare at least one with an [[org]] table",
            ));
        };
        if org_list.get_ref().is_empty() {
            return Err(loc.error(
                org_list.span(),
                "no organization: declare at least one with an [[org]] table",
            ));
        }
        let org_span = org_list.span();
        let raw_orgs = org_list.into_inner();

        let mut orgs: Vec<OrgDecl> = Vec::with_capacity(raw_orgs.len());
        // Where each name and user was declared: (org index, byte offset).
        let mut names: FxHashMap<String, (usize, usize)> = FxHashMap::default();
        let mut users: FxHashMap<i64, (usize, usize)> = FxHashMap::default();
        let mut total: u64 = 0;
        for (i, o) in raw_orgs.into_iter().enumerate() {
            let o_span = o.span();
            let o = o.into_inner();
            let procs_span = o.procs.span();
            let procs = *o.procs.get_ref();
            let procs = u32::try_from(procs).map_err(|_| {
                loc.error(
                    procs_span.clone(),
                    format_args!(
                        "expected a processor count ≥ 0{}, found {procs}",
                        if procs > 0 {
                            format!(" and ≤ {}", u32::MAX)
                        } else {
                            String::new()
                        }
                    ),
                )
            })?;
            total += u64::from(procs);
            if total > u64::from(u32::MAX) {
                return Err(loc.error(
                    procs_span,
                    format_args!("the organizations own more than {} processors in total", u32::MAX),
                ));
            }
            let (name, name_at) = match &o.name {
                Some(n) => {
                    let s = n.get_ref().clone();
                    if s.is_empty() {
                        return Err(loc.error(n.span(), "expected a non-empty name, found \"\""));
                    }
                    if RESERVED.contains(&s.as_str()) {
                        return Err(loc.error(
                            n.span(),
                            format_args!(
                                "the name {s:?} is reserved (a value of `unlisted`); choose another"
                            ),
                        ));
                    }
                    (s, n.span().start)
                }
                None => (format!("org{i}"), o_span.start),
            };
            if let Some(&(j, at)) = names.get(&name) {
                let what = if o.name.is_some() {
                    format!("the name {name:?}")
                } else {
                    format!("this organization has no name and its default name {name:?}")
                };
                return Err(loc.error(
                    o.name.as_ref().map_or(o_span.clone(), |n| n.span()),
                    format_args!(
                        "{what} is already used by org[{j}] (line {}); names must be unique",
                        loc.line(at)
                    ),
                ));
            }
            names.insert(name.clone(), (i, name_at));
            let mut list = Vec::with_capacity(o.users.len());
            for u in &o.users {
                let user = *u.get_ref();
                if let Some(&(j, at)) = users.get(&user) {
                    let other = &orgs.get(j).map_or(name.as_str(), |d: &OrgDecl| d.name.as_str());
                    return Err(loc.error(
                        u.span(),
                        format_args!(
                            "user {user} is listed by organization {i} ({name:?}) and already by \
                             organization {j} ({other:?}, line {}); a user belongs to one organization",
                            loc.line(at)
                        ),
                    ));
                }
                users.insert(user, (i, u.span().start));
                list.push(user);
            }
            orgs.push(OrgDecl {
                name,
                procs,
                users: list,
            });
        }
        if total == 0 {
            return Err(loc.error_at(
                loc.line(org_span.start),
                Some("org"),
                "the organizations own 0 processors in total; give at least one a `procs` ≥ 1",
            ));
        }

        let unlisted = match &raw.unlisted {
            None => Unlisted::Error,
            Some(u) => match u.get_ref().as_str() {
                "error" => Unlisted::Error,
                "random" => Unlisted::Random,
                name => match names.get(name) {
                    Some(&(i, _)) => Unlisted::Org(i as u32),
                    None => {
                        let known: Vec<String> = orgs.iter().map(|o| format!("{:?}", o.name)).collect();
                        return Err(loc.error(
                            u.span(),
                            format_args!(
                                "expected \"error\", \"random\" or the name of an organization ({}), \
                                 found {name:?}",
                                known.join(", ")
                            ),
                        ));
                    }
                },
            },
        };
        Ok(PlatformFile {
            path: path_for_messages.to_path_buf(),
            orgs,
            unlisted,
        })
    }

    /// Processors owned by each organization, in index order.
    pub fn procs(&self) -> Vec<u32> {
        self.orgs.iter().map(|o| o.procs).collect()
    }

    /// Number of organizations.
    pub fn orgs(&self) -> u32 {
        self.orgs.len() as u32
    }

    /// Total processors (saturating).
    pub fn total_procs(&self) -> u32 {
        self.orgs.iter().fold(0u32, |t, o| t.saturating_add(o.procs))
    }

    /// Organization of `user`, or None when unlisted (caller applies `unlisted`).
    pub fn org_of(&self, user: i64) -> Option<u32> {
        self.orgs
            .iter()
            .position(|o| o.users.contains(&user))
            .map(|i| i as u32)
    }

    /// Checks what [`PlatformFile::parse`] guarantees, for a value built by
    /// hand: at least one organization, a total of 1 to `u32::MAX`
    /// processors, no user listed twice, `unlisted` naming an organization
    /// that exists.
    pub fn validate(&self) -> Result<(), SimError> {
        let file = self.path.display();
        let err = |m: String| Err(SimError::Config(format!("{file}: {m}")));
        if self.orgs.is_empty() {
            return err("no organization".into());
        }
        let total: u64 = self.orgs.iter().map(|o| u64::from(o.procs)).sum();
        if total == 0 || total > u64::from(u32::MAX) {
            return err(format!(
                "the organizations own {total} processors in total; expected 1 to {}",
                u32::MAX
            ));
        }
        let mut seen: FxHashMap<i64, usize> = FxHashMap::default();
        for (i, o) in self.orgs.iter().enumerate() {
            for &u in &o.users {
                if let Some(j) = seen.insert(u, i)
                    && j != i
                {
                    return err(format!("user {u} is listed by organizations {j} and {i}"));
                }
            }
        }
        if let Unlisted::Org(o) = self.unlisted
            && o >= self.orgs()
        {
            return err(format!(
                "unlisted users go to organization {o}, but there are {}",
                self.orgs()
            ));
        }
        Ok(())
    }

    /// The user → organization map of a run, unlisted users included
    /// (`seed` seeds `unlisted = "random"`; [`crate::RunConfig`] passes the
    /// seed `--orgs` uses).
    pub fn mapper(&self, seed: u64) -> OrgMapper {
        let mut users = FxHashMap::default();
        for (i, o) in self.orgs.iter().enumerate() {
            for &u in &o.users {
                users.entry(u).or_insert(i as u32);
            }
        }
        OrgMapper {
            file: self.path.display().to_string().into(),
            users: Arc::new(users),
            unlisted: self.unlisted,
            random: UserOrgMap::new(self.orgs(), seed).ok(),
        }
    }
}

/// Maps users to organizations as a [`PlatformFile`] says, unlisted users
/// included. Cheap to clone.
#[derive(Clone, Debug)]
pub struct OrgMapper {
    file: Arc<str>,
    users: Arc<FxHashMap<i64, u32>>,
    unlisted: Unlisted,
    /// The seeded uniform map (`None` only without organizations).
    random: Option<UserOrgMap>,
}

impl OrgMapper {
    /// Organization of `user`; an error when no organization lists it and
    /// `unlisted` is `"error"`.
    pub fn org_of(&self, user: i64) -> Result<u32, String> {
        if let Some(&o) = self.users.get(&user) {
            return Ok(o);
        }
        match (self.unlisted, &self.random) {
            (Unlisted::Org(o), _) => Ok(o),
            (Unlisted::Random, Some(r)) => Ok(r.org_of(user)),
            (Unlisted::Random, None) => Err(format!("user {user}: {} declares no organization", self.file)),
            (Unlisted::Error, _) => Err(format!(
                "user {user} is in no organization of {} and `unlisted` is \"error\"",
                self.file
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PlatformFile, String> {
        PlatformFile::parse(Path::new("dir/plat.toml"), text).map_err(|e| e.to_string())
    }

    /// The message of a refused file: names the file, the line and the key.
    #[track_caller]
    fn refused(text: &str, line: usize, key: &str, says: &str) {
        let e = match parse(text) {
            Ok(f) => panic!("accepted: {f:?}\n{text}"),
            Err(e) => e,
        };
        let prefix = format!("dir/plat.toml:{line}: key `{key}`: ");
        assert!(e.starts_with(&prefix), "expected {prefix:?}…, got {e:?}");
        assert!(e.contains(says), "expected {says:?} in {e:?}");
    }

    const VALID: &str = r#"
# Two named organizations and one unnamed.
unlisted = "random"

[[org]]
name = "lpc"
procs = 40
users = [12, 15, 20]

[[org]]
name = "cern"
procs = 30
users = [3, -1]

[[org]]
procs = 0
"#;

    #[test]
    fn a_valid_file() {
        let f = parse(VALID).unwrap();
        assert_eq!(f.path, Path::new("dir/plat.toml"));
        assert_eq!(
            f.orgs,
            [
                OrgDecl {
                    name: "lpc".into(),
                    procs: 40,
                    users: vec![12, 15, 20]
                },
                OrgDecl {
                    name: "cern".into(),
                    procs: 30,
                    users: vec![3, -1]
                },
                OrgDecl {
                    name: "org2".into(),
                    procs: 0,
                    users: vec![]
                },
            ]
        );
        assert_eq!(f.unlisted, Unlisted::Random);
        assert_eq!(f.procs(), [40, 30, 0]);
        assert_eq!(f.orgs(), 3);
        assert_eq!(f.total_procs(), 70);
        assert_eq!(f.org_of(20), Some(0));
        assert_eq!(f.org_of(-1), Some(1));
        assert_eq!(f.org_of(7), None);
        f.validate().unwrap();
        // Random: the same map as --orgs with the same seed.
        let m = f.mapper(99);
        let uniform = UserOrgMap::new(3, 99).unwrap();
        for u in 0..200 {
            let want = f.org_of(u).unwrap_or_else(|| uniform.org_of(u));
            assert_eq!(m.org_of(u), Ok(want), "user {u}");
        }
    }

    #[test]
    fn unlisted_error_default_and_org() {
        let text = "[[org]]\nprocs = 4\nusers = [1]\n";
        let f = parse(text).unwrap();
        assert_eq!(f.unlisted, Unlisted::Error);
        assert_eq!(f.orgs[0].name, "org0");
        let m = f.mapper(0);
        assert_eq!(m.org_of(1), Ok(0));
        assert_eq!(
            m.org_of(7),
            Err("user 7 is in no organization of dir/plat.toml and `unlisted` is \"error\"".into())
        );
        let f =
            parse("unlisted = \"b\"\n[[org]]\nname = \"a\"\nprocs = 1\n[[org]]\nname = \"b\"\nprocs = 1\n")
                .unwrap();
        assert_eq!(f.unlisted, Unlisted::Org(1));
        assert_eq!(f.mapper(0).org_of(12345), Ok(1));
        let f = parse("unlisted = \"error\"\n[[org]]\nprocs = 1\n").unwrap();
        assert_eq!(f.unlisted, Unlisted::Error);
        // Inline tables are the same thing.
        let f = parse("org = [{ name = \"x\", procs = 2, users = [5] }]\n").unwrap();
        assert_eq!(f.orgs[0].users, [5]);
    }

    #[test]
    fn unknown_keys() {
        refused(
            "[[org]]\nprocs = 1\nprox = 3\n",
            3,
            "org[0].prox",
            "unknown field `prox`",
        );
        refused(
            "[[org]]\nprocs = 1\n[[org]]\nprocs = 2\nuser = [1]\n",
            5,
            "org[1].user",
            "unknown field `user`",
        );
        refused(
            "orgs = 1\n[[org]]\nprocs = 1\n",
            1,
            "orgs",
            "unknown field `orgs`",
        );
    }

    #[test]
    fn wrong_types() {
        refused(
            "[[org]]\nprocs = \"40\"\n",
            2,
            "org[0].procs",
            "expected an integer",
        );
        refused("[[org]]\nprocs = 1.5\n", 2, "org[0].procs", "expected an integer");
        refused(
            "[[org]]\nprocs = 1\n\n[[org]]\nprocs = 1\nusers = [1, \"bob\"]\n",
            6,
            "org[1].users[1]",
            "expected an integer",
        );
        refused(
            "[[org]]\nprocs = 1\nusers = 3\n",
            3,
            "org[0].users",
            "expected a sequence",
        );
        refused(
            "[[org]]\nname = 7\nprocs = 1\n",
            2,
            "org[0].name",
            "expected a string",
        );
        refused(
            "unlisted = 1\n[[org]]\nprocs = 1\n",
            1,
            "unlisted",
            "expected a string",
        );
        refused(
            "[org]\nprocs = 1\n",
            1,
            "org",
            "write each organization as an [[org]] table",
        );
    }

    #[test]
    fn unlisted_after_the_org_tables() {
        refused(
            "[[org]]\nprocs = 1\n\n[[org]]\nprocs = 1\nunlisted = \"random\"\n",
            6,
            "org[1].unlisted",
            "move it above the first [[org]]",
        );
    }

    #[test]
    fn missing_procs() {
        refused(
            "[[org]]\nname = \"a\"\nprocs = 1\n\n[[org]]\nname = \"b\"\n",
            5,
            "org[1]",
            "missing field `procs`",
        );
    }

    #[test]
    fn negative_or_huge_procs() {
        refused(
            "[[org]]\nprocs = 4\n\n[[org]]\nname = \"x\"\nprocs = -3\n",
            6,
            "org[1].procs",
            "expected a processor count ≥ 0, found -3",
        );
        refused("[[org]]\nprocs = 4294967296\n", 2, "org[0].procs", "≤ 4294967295");
        refused(
            "[[org]]\nprocs = 99999999999999999999999\n",
            2,
            "org[0].procs",
            "the integer 99999999999999999999999 is out of range",
        );
        refused(
            "[[org]]\nprocs = 4294967295\n[[org]]\nprocs = 1\n",
            4,
            "org[1].procs",
            "more than 4294967295 processors in total",
        );
    }

    #[test]
    fn a_user_in_two_organizations() {
        refused(
            "[[org]]\nname = \"lpc\"\nprocs = 1\nusers = [1, 2]\n\n[[org]]\nname = \"cern\"\nprocs = 1\nusers = [3,\n  2]\n",
            10,
            "org[1].users[1]",
            "user 2 is listed by organization 1 (\"cern\") and already by organization 0 (\"lpc\", line 4)",
        );
        // Twice in the same organization.
        refused(
            "[[org]]\nname = \"lpc\"\nprocs = 1\nusers = [1, 1]\n",
            4,
            "org[0].users[1]",
            "already by organization 0 (\"lpc\", line 4)",
        );
    }

    #[test]
    fn duplicate_names() {
        refused(
            "[[org]]\nname = \"a\"\nprocs = 1\n[[org]]\nname = \"a\"\nprocs = 1\n",
            5,
            "org[1].name",
            "the name \"a\" is already used by org[0] (line 2)",
        );
        // A default name counts.
        refused(
            "[[org]]\nprocs = 1\n[[org]]\nname = \"org0\"\nprocs = 1\n",
            4,
            "org[1].name",
            "already used by org[0]",
        );
        refused(
            "[[org]]\nname = \"org1\"\nprocs = 1\n[[org]]\nprocs = 1\n",
            4,
            "org[1]",
            "default name \"org1\" is already used by org[0] (line 2)",
        );
        refused("[[org]]\nname = \"\"\nprocs = 1\n", 2, "org[0].name", "non-empty");
        refused(
            "[[org]]\nname = \"random\"\nprocs = 1\n",
            2,
            "org[0].name",
            "reserved",
        );
    }

    #[test]
    fn unlisted_naming_an_unknown_org() {
        refused(
            "\nunlisted = \"cren\"\n[[org]]\nname = \"cern\"\nprocs = 1\n",
            2,
            "unlisted",
            "expected \"error\", \"random\" or the name of an organization (\"cern\"), found \"cren\"",
        );
    }

    #[test]
    fn no_organization() {
        refused("", 1, "org", "no organization");
        refused("# nothing\nunlisted = \"random\"\n", 1, "org", "no organization");
        refused("\norg = []\n", 2, "org", "no organization");
    }

    #[test]
    fn zero_processors_in_total() {
        refused(
            "[[org]]\nprocs = 0\n[[org]]\nprocs = 0\n",
            1,
            "org",
            "0 processors in total",
        );
    }

    #[test]
    fn invalid_syntax() {
        refused(
            "[[org]]\nname = \"a\"\nprocs = 4 0\n",
            3,
            "org[0].procs",
            "invalid TOML",
        );
        refused(
            "[[org]]\nprocs = 4\n[[org]]\nusers = [1, 2\n",
            4,
            "org[1].users",
            "invalid TOML",
        );
        // An array left open is named where it opened, not where the
        // parser gave up; brackets in strings and comments do not count.
        refused(
            "[[org]]\nprocs = 4 # [\nusers = [\"a]\", \"b\"\n\n[[org]]\nprocs = 4\n",
            3,
            "org[0].users",
            "the `[` opened here is not closed (the parser stopped at line 5",
        );
        refused(
            "unlisted = random\n[[org]]\nprocs = 4\n",
            1,
            "unlisted",
            "invalid TOML",
        );
        // A duplicate key is a TOML error too.
        refused(
            "[[org]]\nprocs = 4\nprocs = 5\n",
            3,
            "org[0].procs",
            "invalid TOML",
        );
        // No key to name: file and line still.
        let e = parse("[[org]\nprocs = 4\n").unwrap_err();
        assert!(e.starts_with("dir/plat.toml:1: "), "{e}");
        assert!(e.contains("invalid TOML"), "{e}");
    }

    #[test]
    fn never_panics_on_junk() {
        for text in [
            "\u{feff}[[org]]\nprocs = 1\n",
            "[[org]]\nprocs = 1\n[org.x]\n",
            "[[org]]]\n",
            "=",
            "[[org]]\nprocs = 1\nusers = [[1]]\n",
            "[[org]]\nprocs = 1\nname = { a = 1 }\n",
            "\"\u{0}\" = 1",
            "a.b.c = 1\n[[org]]\nprocs = 1",
        ] {
            let _ = parse(text);
        }
    }

    #[test]
    fn the_mapper_is_shareable() {
        fn shareable<T: Clone + Send + Sync + 'static>(_: &T) {}
        shareable(&parse(VALID).unwrap().mapper(1));
        shareable(&parse(VALID).unwrap());
    }

    #[test]
    fn load_names_a_missing_file() {
        let e = PlatformFile::load(Path::new("/nonexistent/plat.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/plat.toml: "), "{e}");
    }

    #[test]
    fn validate_catches_hand_built_mistakes() {
        let org = |procs, users: &[i64]| OrgDecl {
            name: "x".into(),
            procs,
            users: users.to_vec(),
        };
        let file = |orgs, unlisted| PlatformFile {
            path: "p.toml".into(),
            orgs,
            unlisted,
        };
        assert!(file(vec![], Unlisted::Error).validate().is_err());
        assert!(file(vec![org(0, &[])], Unlisted::Error).validate().is_err());
        assert!(
            file(vec![org(1, &[1]), org(1, &[1])], Unlisted::Error)
                .validate()
                .is_err()
        );
        assert!(file(vec![org(1, &[])], Unlisted::Org(1)).validate().is_err());
        assert!(file(vec![org(1, &[1, 2])], Unlisted::Org(0)).validate().is_ok());
    }

    /// A log of 6 one-processor jobs by users 1, 2, 3, 1, 2, 9 (MaxProcs 4).
    const LOG: &str = "; MaxProcs: 4
1 0 0 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
2 1 0 10 1 -1 -1 1 10 -1 1 2 1 -1 -1 -1 -1 -1
3 2 0 10 1 -1 -1 1 10 -1 1 3 1 -1 -1 -1 -1 -1
4 3 0 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1
5 4 0 10 1 -1 -1 1 10 -1 1 2 1 -1 -1 -1 -1 -1
6 5 0 10 1 -1 -1 1 10 -1 1 9 1 -1 -1 -1 -1 -1
";

    fn config(platform: &str) -> crate::RunConfig {
        let mut c = crate::RunConfig::new(
            crate::TraceInput::Bytes {
                name: "log.swf".into(),
                data: LOG.as_bytes(),
            },
            "fifo".parse().unwrap(),
        );
        c.platform_file = Some(parse(platform).unwrap());
        c
    }

    fn run(
        c: &crate::RunConfig,
    ) -> Result<(crate::PlatformInfo, fairsched_core::metrics::Metrics), SimError> {
        let scan = c.trace.scan(false)?;
        let mut m = fairsched_core::metrics::Metrics::default();
        let report = c.run(&scan, &mut m)?;
        Ok((report.platform, m))
    }

    const TWO: &str = "unlisted = \"b\"\n[[org]]\nname = \"a\"\nprocs = 3\nusers = [1, 3]\n\
                       [[org]]\nname = \"b\"\nprocs = 2\nusers = [2]\n[[org]]\nprocs = 0\n";

    #[test]
    fn a_run_takes_orgs_procs_and_users_from_the_file() {
        let mut c = config(TWO);
        // Ignored: the file decides.
        c.orgs = 7;
        c.check().unwrap();
        let (info, m) = run(&c).unwrap();
        assert_eq!(info.per_org, [3, 2, 0]);
        assert_eq!((info.total, info.source), (5, "--platform"));
        assert_eq!(
            info.machines,
            [5],
            "one machine of the file's total, not the header's 4"
        );
        let tasks = |o: u32| m.by_org.get(&fairsched_core::OrgId(o)).map_or(0, |a| a.tasks);
        // Users 1, 3 → a (3 jobs); user 2 and unlisted user 9 → b (3 jobs).
        assert_eq!((tasks(0), tasks(1), tasks(2)), (3, 3, 0));

        // --machines must add up to the file's total.
        c.machines = Some(vec![2, 3]);
        let (info, _) = run(&c).unwrap();
        assert_eq!((info.machines, info.per_org), (vec![2, 3], vec![3, 2, 0]));
        c.machines = Some(vec![2, 2]);
        let e = c.check().unwrap_err().to_string();
        assert!(
            e.contains("--machines gives 4 processors but dir/plat.toml declares 5"),
            "{e}"
        );
        c.machines = None;
        c.procs = Some(6);
        let e = c.check().unwrap_err().to_string();
        assert!(e.contains("--procs gives 6 processors"), "{e}");
        c.procs = Some(5);
        c.check().unwrap();
    }

    #[test]
    fn an_unlisted_user_stops_the_run_with_a_clear_error() {
        let c = config("[[org]]\nprocs = 4\nusers = [1, 2, 3]\n");
        c.check().unwrap();
        let e = run(&c).unwrap_err().to_string();
        assert_eq!(
            e,
            "log.swf: job 6: user 9 is in no organization of dir/plat.toml and `unlisted` is \"error\""
        );
        // Outside the window, the unlisted user does not matter.
        let mut c = c;
        c.window = Some((0, 5));
        let (_, m) = run(&c).unwrap();
        assert_eq!(m.all.tasks, 5);
    }

    #[test]
    fn random_unlisted_users_follow_the_orgs_mapping() {
        // With no user listed, "random" is exactly --orgs 3 with the same seed.
        let mut c =
            config("unlisted = \"random\"\n[[org]]\nprocs = 2\n[[org]]\nprocs = 1\n[[org]]\nprocs = 1\n");
        c.seed = 5;
        let (_, from_file) = run(&c).unwrap();
        let mut flags = c.clone();
        flags.platform_file = None;
        flags.orgs = 3;
        let (_, from_flags) = run(&flags).unwrap();
        let per_org = |m: &fairsched_core::metrics::Metrics| {
            m.by_org.iter().map(|(o, a)| (o.0, a.tasks)).collect::<Vec<_>>()
        };
        assert_eq!(per_org(&from_file), per_org(&from_flags));
    }
}

/// A TOML number, integer or float (the files' times and rates).
#[derive(serde::Deserialize)]
#[serde(untagged, expecting = "a number")]
pub(crate) enum Num {
    I(i64),
    F(f64),
}

impl Num {
    pub(crate) fn f(&self) -> f64 {
        match *self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}
