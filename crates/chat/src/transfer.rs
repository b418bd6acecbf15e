//! Files both ways: `/cc send <path>` reads a file of the session's worktree through the host
//! (which confines the path: no `..`, no absolute path, no symlink out) and queues it as a
//! document; a file sent into the chat is refused plainly past the size limit.

use nucleic_protocol::{
    Attached, FileEncoding, Intent, MAX_ATTACHMENT_CHUNK_BYTES, MAX_FILE_CONTENT_BYTES,
};

use crate::bridge::{Bridge, BridgeError};
use crate::exec::short;
use crate::files::{ATTACHMENT_LIMIT, human, safe_name, spool};
use crate::transport::{InFile, OutFile};

impl Bridge {
    /// Where outgoing files wait for their send (0700; each file 0600, removed once sent).
    fn spool_dir(&self) -> std::path::PathBuf {
        let store = &self.config.store;
        store.parent().unwrap_or(store).join("files").join("out")
    }

    /// `/cc send <path>` for `session`: the file queued for `chat`, or why not (a sentence).
    pub(crate) async fn send_file(
        &mut self,
        chat: &str,
        session: &str,
        path: &str,
    ) -> Result<Result<String, String>, BridgeError> {
        // The parser refused `..` and absolute paths already; the host refuses them again and
        // every symlink that leads out of the worktree.
        let file = match self.client.read_file(session, path).await {
            Ok(file) => file,
            Err(e) => return Ok(Err(format!("Not sent: {e}"))),
        };
        if file.truncated {
            return Ok(Err(format!(
                "Not sent: {path} is {}; files over {} are not sent through the chat.",
                human(file.size),
                human(MAX_FILE_CONTENT_BYTES)
            )));
        }
        let bytes = match file.encoding {
            FileEncoding::Utf8 => file.content.into_bytes(),
            FileEncoding::Base64 => {
                use base64::Engine as _;
                match base64::engine::general_purpose::STANDARD.decode(file.content.as_bytes()) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        return Ok(Err(format!("Not sent: the host's copy is unreadable ({e}).")));
                    }
                }
            }
        };
        let spooled = spool(&self.spool_dir(), &bytes)
            .map_err(|e| BridgeError::Gone(format!("cannot spool {path} for sending: {e}")))?;
        let out = OutFile {
            name: safe_name(path),
            mime: file.mime,
            size: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
            spool: spooled,
        };
        let caption = format!("{path} from session {}", short(session));
        let body = crate::transport::file_body(&caption, &out);
        self.outbox.enqueue(self.transport.name(), chat, &body, crate::bridge::now_ms())?;
        self.wake.notify_one();
        Ok(Ok(format!("Sending {path} ({}).", human(out.size))))
    }

    /// A file a paired user sent into `chat`: refused past the limit (by its declared size,
    /// before anything is downloaded, and by what arrives), else downloaded and handed on.
    pub(crate) async fn receive_file(
        &mut self,
        chat: &str,
        file: &InFile,
    ) -> Result<(), BridgeError> {
        let name = safe_name(&file.name);
        if let Some(size) = file.size
            && size > ATTACHMENT_LIMIT
        {
            let text = format!(
                "Not taken: {name} is {}; the chat bridge takes files up to {}. Nothing was downloaded.",
                human(size),
                human(ATTACHMENT_LIMIT)
            );
            return self.say(chat, &text, &[]);
        }
        let text = match self.transport.fetch(file, ATTACHMENT_LIMIT).await {
            Ok(bytes) => self.attach(chat, &name, &file.mime, bytes).await?,
            Err(why) => format!("Not taken: {name} could not be downloaded: {why}"),
        };
        self.say(chat, &text, &[])
    }
}

impl Bridge {
    /// Hands `bytes` to the chat's current session as an attachment; what to answer.
    async fn attach(
        &mut self,
        chat: &str,
        name: &str,
        mime: &str,
        bytes: Vec<u8>,
    ) -> Result<String, BridgeError> {
        let Some(session) = self.state.chat(chat)?.session else {
            return Ok(format!(
                "Not taken: {name} has no session to go to. /cc <task> starts one; send the file after it."
            ));
        };
        use base64::Engine as _;
        let chunk = usize::try_from(MAX_ATTACHMENT_CHUNK_BYTES).unwrap_or(usize::MAX);
        let mut kept: Option<Attached> = None;
        // At least one part, so an empty file is kept too.
        let parts: Vec<&[u8]> =
            if bytes.is_empty() { vec![&[][..]] } else { bytes.chunks(chunk).collect() };
        for part in parts {
            let content = base64::engine::general_purpose::STANDARD.encode(part);
            let intent = Intent::Attach {
                session_id: session.clone(),
                name: name.to_owned(),
                content,
                append: kept.as_ref().map(|k| k.name.clone()),
            };
            match self.client.intent_as::<Attached>(intent).await {
                Ok(attached) => kept = Some(attached),
                Err(e) => return Ok(format!("Not taken: the host refused {name}: {e}")),
            }
        }
        let Some(attached) = kept else { return Ok(format!("Not taken: {name} is empty.")) };
        let note = format!("[Attached file: {} ({mime}, {})]", attached.path, human(attached.size));
        self.state.add_attachment_note(chat, &note)?;
        Ok(format!(
            "Attached {} ({}) to session {}: the next /cc say tells the agent where it is.",
            attached.name,
            human(attached.size),
            short(&session)
        ))
    }

    /// `text` with the notes of the files attached since the chat's last message to its agent
    /// (kept in the store: a restarted bridge still tells them), and the mark to pass to
    /// [`Bridge::attachments_told`] once the message reached the host.
    pub(crate) fn with_attachments(
        &mut self,
        chat: &str,
        text: &str,
    ) -> Result<(String, i64), BridgeError> {
        let (notes, last) = self.state.attachment_notes(chat)?;
        let text = match notes.is_empty() {
            true => text.to_owned(),
            false => format!("{text}\n\n{}", notes.join("\n")),
        };
        Ok((text, last))
    }

    /// The notes up to `last` reached the agent's host: they are not told again.
    pub(crate) fn attachments_told(&mut self, chat: &str, last: i64) -> Result<(), BridgeError> {
        if last > 0 {
            self.state.attachment_notes_delivered(chat, last)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_out_of_the_worktree_is_refused_by_the_parser() {
        for path in ["../secret", "/etc/passwd", "a/../../b", ""] {
            assert!(crate::command::parse(&format!("/cc send {path}")).is_err(), "{path}");
        }
    }
}
