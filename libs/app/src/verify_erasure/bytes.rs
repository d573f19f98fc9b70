//! Canaries in bytes at rest: every file under a directory read in chunks
//! and searched for each canary's UTF-8 bytes, ASCII letters matched
//! without regard to case. A match that straddles two chunks is found
//! once, in the chunk where it ends.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// The canaries as the scanner looks for them: UTF-8 bytes, ASCII-lowercased.
#[derive(Debug, Clone)]
pub struct Needles {
    lowered: Vec<Vec<u8>>,
}

impl Needles {
    pub fn new(canaries: &[String]) -> Self {
        Needles {
            lowered: canaries
                .iter()
                .map(|c| c.as_bytes().to_ascii_lowercase())
                .collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.lowered.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lowered.is_empty()
    }

    fn longest(&self) -> usize {
        self.lowered.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// How often each canary occurs in `bytes` (overlapping matches count).
    pub fn count(&self, bytes: &[u8]) -> Vec<u64> {
        let mut counts = vec![0; self.lowered.len()];
        let lowered = bytes.to_ascii_lowercase();
        self.count_ending_after(&lowered, 0, &mut counts);
        counts
    }

    /// How often each canary occurs in what `reader` yields.
    pub fn count_in_reader(&self, reader: impl Read) -> io::Result<Vec<u64>> {
        self.count_in_chunks(reader, CHUNK)
    }

    fn count_in_chunks(&self, mut reader: impl Read, chunk: usize) -> io::Result<Vec<u64>> {
        let mut counts = vec![0; self.lowered.len()];
        // The last `longest - 1` bytes of what was read so far, then the
        // next chunk: too short to hold a whole match on its own, so every
        // match found ending past it is new.
        let keep = self.longest().saturating_sub(1);
        let mut buffer: Vec<u8> = Vec::with_capacity(keep + chunk);
        let mut read = vec![0u8; chunk.max(1)];
        loop {
            let n = match reader.read(&mut read) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let tail = buffer.len();
            buffer.extend(read[..n].iter().map(u8::to_ascii_lowercase));
            self.count_ending_after(&buffer, tail, &mut counts);
            let drop = buffer.len().saturating_sub(keep);
            buffer.drain(..drop);
        }
        Ok(counts)
    }

    /// Counts the matches in `lowered` whose last byte lies at or after
    /// `from` (the ones ending earlier were counted with the previous chunk).
    fn count_ending_after(&self, lowered: &[u8], from: usize, counts: &mut [u64]) {
        for (needle, count) in self.lowered.iter().zip(counts.iter_mut()) {
            let Some(&first) = needle.first() else {
                continue;
            };
            if lowered.len() < needle.len() {
                continue;
            }
            let start = (from + 1).saturating_sub(needle.len());
            for at in start..=lowered.len() - needle.len() {
                if lowered[at] == first && lowered[at..at + needle.len()] == needle[..] {
                    *count += 1;
                }
            }
        }
    }
}

/// One file with at least one canary in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHits {
    /// Relative to the scanned directory.
    pub path: PathBuf,
    /// Per canary, in the order given.
    pub counts: Vec<u64>,
}

/// What a scan of a directory found.
#[derive(Debug, Default)]
pub struct TreeScan {
    pub files: u64,
    pub bytes: u64,
    pub hits: Vec<FileHits>,
    /// Files or directories that could not be read, with why.
    pub unreadable: Vec<(PathBuf, String)>,
    /// Entries listed but gone before they were opened (a database dropped
    /// or a WAL segment recycled during the scan): they hold no bytes any
    /// more, so they are counted, not failed.
    pub vanished: u64,
    /// Directories left out on purpose.
    pub skipped: Vec<PathBuf>,
}

/// Every regular file under `root` (symbolic links are not followed) but
/// those under the directories in `skip`, sorted by path. Blocking: run it
/// off the async runtime.
pub fn scan_tree(root: &Path, needles: &Needles, skip: &[PathBuf]) -> TreeScan {
    let mut scan = TreeScan::default();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                scan.vanished += 1;
                continue;
            }
            Err(e) => {
                scan.unreadable.push((relative(root, &dir), e.to_string()));
                continue;
            }
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let kind = match std::fs::symlink_metadata(&path) {
                Ok(metadata) => metadata.file_type(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    scan.vanished += 1;
                    continue;
                }
                Err(e) => {
                    scan.unreadable.push((relative(root, &path), e.to_string()));
                    continue;
                }
            };
            if kind.is_dir() && skip.contains(&path) {
                scan.skipped.push(relative(root, &path));
            } else if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                match scan_file(&path, needles) {
                    Ok((size, counts)) => {
                        scan.files += 1;
                        scan.bytes += size;
                        if counts.iter().any(|c| *c > 0) {
                            scan.hits.push(FileHits {
                                path: relative(root, &path),
                                counts,
                            });
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => scan.vanished += 1,
                    Err(e) => scan.unreadable.push((relative(root, &path), e.to_string())),
                }
            }
        }
    }
    scan.hits.sort_by(|a, b| a.path.cmp(&b.path));
    scan
}

fn scan_file(path: &Path, needles: &Needles) -> io::Result<(u64, Vec<u64>)> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    Ok((size, needles.count_in_reader(file)?))
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needles(canaries: &[&str]) -> Needles {
        Needles::new(&canaries.iter().map(|c| c.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn matches_ascii_letters_in_any_case_and_utf8_bytes_exactly() {
        let n = needles(&["Canary-42", "绿茶", "café"]);
        let text = "x canary-42 CANARY-42 cAnArY-42 我爱绿茶 CAFÉ café".as_bytes();
        // "CAFÉ" is not "café": only ASCII letters fold.
        assert_eq!(n.count(text), vec![3, 1, 1]);
        assert_eq!(n.count(b"canary-4"), vec![0, 0, 0]);
        assert_eq!(n.count(b""), vec![0, 0, 0]);
    }

    #[test]
    fn overlapping_matches_all_count() {
        assert_eq!(needles(&["aaa"]).count(b"aaaaa"), vec![3]);
    }

    #[test]
    fn a_match_across_chunk_boundaries_is_found_once() {
        let n = needles(&["boundary-canary", "ary", "x"]);
        let mut text = vec![b'.'; 100];
        text.extend_from_slice(b"BOUNDARY-canary");
        text.extend_from_slice(&[b'.'; 37]);
        text.extend_from_slice(b"boundary-CANARY");
        let expected = n.count(&text);
        assert_eq!(expected, vec![2, 4, 0]);
        // Every chunk size, down to one byte at a time: each split point
        // falls inside a match for some size.
        for chunk in 1..40 {
            assert_eq!(
                n.count_in_chunks(&text[..], chunk).unwrap(),
                expected,
                "chunk of {chunk} bytes"
            );
        }
    }

    #[test]
    fn a_short_reader_is_no_different() {
        // A reader that hands out fewer bytes than asked, as pipes do.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(out.len()).min(3);
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let n = needles(&["needle-in-bytes"]);
        let text = b"....NEEDLE-in-bytes....needle-IN-BYTES";
        assert_eq!(n.count_in_reader(Trickle(text)).unwrap(), vec![2]);
    }

    #[test]
    fn scans_a_tree_and_names_each_file_with_its_counts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("top.bin"), b"\x00Secret-One\x00secret-one").unwrap();
        std::fs::write(dir.path().join("a/b/deep.db"), b"..SECRET-TWO..").unwrap();
        std::fs::write(dir.path().join("a/clean.txt"), b"nothing here").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("top.bin"), dir.path().join("link")).unwrap();
        let scan = scan_tree(dir.path(), &needles(&["secret-one", "secret-two"]), &[]);
        assert_eq!(scan.files, 3, "the symbolic link is not followed");
        assert_eq!(
            scan.hits,
            vec![
                FileHits {
                    path: PathBuf::from("a/b/deep.db"),
                    counts: vec![0, 1]
                },
                FileHits {
                    path: PathBuf::from("top.bin"),
                    counts: vec![2, 0]
                },
            ]
        );
        assert!(scan.unreadable.is_empty());
    }

    #[test]
    fn skips_the_directories_it_is_told_to() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("models/m")).unwrap();
        std::fs::write(dir.path().join("models/m/vocab.txt"), b"secret-one").unwrap();
        std::fs::write(dir.path().join("log.db"), b"secret-one").unwrap();
        let scan = scan_tree(
            dir.path(),
            &needles(&["secret-one"]),
            &[dir.path().join("models")],
        );
        assert_eq!(scan.files, 1);
        assert_eq!(scan.hits.len(), 1);
        assert_eq!(scan.hits[0].path, PathBuf::from("log.db"));
        assert_eq!(scan.skipped, vec![PathBuf::from("models")]);
    }
}
