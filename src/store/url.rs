//! Database URLs: which backend a URL names (`sqlite://PATH`, `postgres://…`), refused when the
//! scheme is unknown or the SQLite path is empty, so a typo never becomes a new database.

use std::path::PathBuf;

/// A database URL whose backend is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbUrl {
    /// `sqlite://PATH`, `sqlite:PATH` (a file, created when missing unless opened as existing)
    /// or `sqlite::memory:`; `url` is the URL as given.
    Sqlite {
        /// The URL as given.
        url: String,
        /// The file; none for an in-memory database.
        path: Option<PathBuf>,
    },
    /// `postgres://…` or `postgresql://…`.
    Postgres(String),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
/// Why a database URL is refused.
pub enum DbUrlError {
    #[error(
        "unsupported database URL {0:?}: use sqlite://PATH (e.g. sqlite://data/engram.db) or postgres://USER@HOST/DB"
    )]
    /// The scheme is neither sqlite nor postgres.
    Scheme(String),
    #[error(
        "the database URL {0:?} names no file: use sqlite://PATH, e.g. sqlite://data/engram.db"
    )]
    /// A sqlite URL without a path.
    EmptyPath(String),
    #[error("the database URL {url:?} is not a valid PostgreSQL URL: {reason}")]
    /// A postgres URL the driver cannot read.
    Malformed {
        /// The URL, password removed.
        url: String,
        /// What the driver said.
        reason: String,
    },
}

impl DbUrl {
    /// Which backend `url` names. Errors quote the URL with any password hidden.
    pub fn parse(url: &str) -> Result<DbUrl, DbUrlError> {
        let shown = || crate::config::redact_url(url);
        if let Some(rest) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let path = rest.split('?').next().unwrap_or("");
            if path == ":memory:" {
                return Ok(DbUrl::Sqlite {
                    url: url.to_string(),
                    path: None,
                });
            }
            if path.trim().is_empty() {
                return Err(DbUrlError::EmptyPath(shown()));
            }
            return Ok(DbUrl::Sqlite {
                url: url.to_string(),
                path: Some(PathBuf::from(path)),
            });
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            use std::str::FromStr as _;
            sqlx::postgres::PgConnectOptions::from_str(url).map_err(|e| {
                DbUrlError::Malformed {
                    url: shown(),
                    // sqlx quotes the URL in some errors: keep only its first words.
                    reason: e.to_string().replace(url, &shown()),
                }
            })?;
            return Ok(DbUrl::Postgres(url.to_string()));
        }
        Err(DbUrlError::Scheme(shown()))
    }

    /// Whether two URLs name the same database (`sqlite:x.db` and `sqlite://./x.db` do).
    pub fn same_database(&self, other: &DbUrl) -> bool {
        match (self, other) {
            (DbUrl::Sqlite { path: Some(a), .. }, DbUrl::Sqlite { path: Some(b), .. }) => {
                let canonical = |p: &std::path::Path| {
                    std::fs::canonicalize(p).unwrap_or_else(|_| {
                        p.components().filter(|c| c.as_os_str() != ".").collect()
                    })
                };
                canonical(a) == canonical(b)
            }
            _ => self == other,
        }
    }

    /// The file of a SQLite database (None for PostgreSQL and in-memory SQLite).
    pub fn sqlite_file(&self) -> Option<&std::path::Path> {
        match self {
            DbUrl::Sqlite { path, .. } => path.as_deref(),
            DbUrl::Postgres(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_and_paths() {
        assert_eq!(
            DbUrl::parse("sqlite://data/engram.db")
                .unwrap()
                .sqlite_file(),
            Some(std::path::Path::new("data/engram.db"))
        );
        assert_eq!(
            DbUrl::parse("sqlite:x.db?mode=rwc").unwrap().sqlite_file(),
            Some(std::path::Path::new("x.db"))
        );
        assert!(matches!(
            DbUrl::parse("sqlite::memory:").unwrap(),
            DbUrl::Sqlite { path: None, .. }
        ));
        assert!(matches!(
            DbUrl::parse("postgres://engram@db/engram").unwrap(),
            DbUrl::Postgres(_)
        ));
        for bad in ["sqlite://", "sqlite:", "sqlite://?mode=rwc", "sqlite://  "] {
            assert!(
                matches!(DbUrl::parse(bad), Err(DbUrlError::EmptyPath(_))),
                "{bad}"
            );
        }
        for bad in ["postgress://u@h/db", "mysql://x", "data/engram.db", ""] {
            assert!(
                matches!(DbUrl::parse(bad), Err(DbUrlError::Scheme(_))),
                "{bad}"
            );
        }
        let err = DbUrl::parse("mysql://u:hunter2@h/db")
            .unwrap_err()
            .to_string();
        assert!(
            !err.contains("hunter2") && err.contains("sqlite://PATH"),
            "{err}"
        );
    }
}
