//! Where an event came from in an agent's output (`<run>/<stream><offset>.<index>`), and the
//! checkpoint a re-adopted agent's output is resumed after: the last origin of each stream
//! already in the transcript.

/// Which output stream an origin points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
    /// The run's end (`runFinished`): always at place 0.0.
    Exit,
}

impl OutputStream {
    fn letter(self) -> char {
        match self {
            OutputStream::Stdout => 'o',
            OutputStream::Stderr => 'e',
            OutputStream::Exit => 'x',
        }
    }
}

/// One event's place in an agent's output: the byte offset just past its line and its index
/// among that line's events. Ordered by (offset, index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub offset: u64,
    pub index: u32,
}

/// The origin string of an event of run `run`.
pub fn origin(run: &str, stream: OutputStream, place: Place) -> String {
    format!("{run}/{}{}.{}", stream.letter(), place.offset, place.index)
}

/// The origin of run `run`'s `runFinished`: once it is written, nothing of the run is left.
pub fn exit_origin(run: &str) -> String {
    origin(run, OutputStream::Exit, Place { offset: 0, index: 0 })
}

/// Parses an origin string: its run, stream and place (`None` when malformed).
pub fn parse_origin(text: &str) -> Option<(&str, OutputStream, Place)> {
    let (run, rest) = text.rsplit_once('/')?;
    let stream = match rest.chars().next()? {
        'o' => OutputStream::Stdout,
        'e' => OutputStream::Stderr,
        'x' => OutputStream::Exit,
        _ => return None,
    };
    let (offset, index) = rest.get(1..)?.split_once('.')?;
    Some((run, stream, Place { offset: offset.parse().ok()?, index: index.parse().ok()? }))
}

/// What of one run's output is already in the transcript: the last place of each stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    pub stdout: Option<Place>,
    pub stderr: Option<Place>,
    /// The run's end is written: nothing of it is left to replay.
    pub exited: bool,
}

impl Checkpoint {
    /// The checkpoint of run `run` among the origins of a transcript's events.
    pub fn of_run<'a>(run: &str, origins: impl IntoIterator<Item = &'a str>) -> Checkpoint {
        let mut checkpoint = Checkpoint::default();
        for (r, stream, place) in origins.into_iter().filter_map(parse_origin) {
            if r != run {
                continue;
            }
            let last = match stream {
                OutputStream::Stdout => &mut checkpoint.stdout,
                OutputStream::Stderr => &mut checkpoint.stderr,
                OutputStream::Exit => {
                    checkpoint.exited = true;
                    continue;
                }
            };
            *last = Some(last.map_or(place, |p| p.max(place)));
        }
        checkpoint
    }

    /// Whether the event at `place` of `stream` is already written.
    pub fn covers(&self, stream: OutputStream, place: Place) -> bool {
        let last = match stream {
            OutputStream::Stdout => self.stdout,
            OutputStream::Stderr => self.stderr,
            OutputStream::Exit => return self.exited,
        };
        last.is_some_and(|last| place <= last)
    }

    /// Whether every event of the line ending at `offset` of `stream` was already written (its
    /// control traffic, if any, was acted on by the previous host).
    pub fn covers_line(&self, stream: OutputStream, offset: u64) -> bool {
        let last = match stream {
            OutputStream::Stdout => self.stdout,
            OutputStream::Stderr => self.stderr,
            OutputStream::Exit => return self.exited,
        };
        last.is_some_and(|last| offset <= last.offset)
    }
}

/// How a supervised run tags its events with origins, and where it resumes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    /// The run's id (the keeper's), unique per agent process.
    pub run: String,
    /// Events at or before this are already written: they are decoded again (to rebuild the
    /// decoder's and the protocol's state) but not handed over.
    pub after: Checkpoint,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_round_trip_and_order() {
        let place = Place { offset: 1234, index: 2 };
        let text = origin("k-1a2b", OutputStream::Stdout, place);
        assert_eq!(text, "k-1a2b/o1234.2");
        assert_eq!(parse_origin(&text), Some(("k-1a2b", OutputStream::Stdout, place)));
        for bad in ["", "k", "k/z1.0", "k/o1", "k/o.1", "k/o1.x", "k/e-1.0"] {
            assert_eq!(parse_origin(bad), None, "{bad}");
        }
        let origins = ["a/o10.0", "b/o99.0", "a/o10.1", "a/e5.0", "a/o7.3", "junk", "b/x0.0"];
        let c = Checkpoint::of_run("a", origins);
        assert_eq!(c.stdout, Some(Place { offset: 10, index: 1 }));
        assert_eq!(c.stderr, Some(Place { offset: 5, index: 0 }));
        assert!(c.covers(OutputStream::Stdout, Place { offset: 10, index: 1 }));
        assert!(!c.covers(OutputStream::Stdout, Place { offset: 10, index: 2 }));
        assert!(c.covers_line(OutputStream::Stdout, 10));
        assert!(!c.covers_line(OutputStream::Stdout, 11));
        assert!(!c.exited);
        assert!(Checkpoint::of_run("b", [exit_origin("b").as_str()]).exited);
        assert!(!Checkpoint::default().covers(OutputStream::Stderr, Place { offset: 0, index: 0 }));
    }
}
