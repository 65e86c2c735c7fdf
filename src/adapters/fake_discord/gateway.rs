//! The fake Discord's gateway: a WebSocket server on 127.0.0.1 speaking as much of Discord's
//! gateway protocol as serenity's real shard runners need (HELLO, IDENTIFY with the shard,
//! READY, heartbeats), sending each dispatched event to the shard Discord sends it to.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// The shard Discord sends a guild's events to (`(guild_id >> 22) % total`); events without a
/// guild (DMs) go to shard 0.
pub fn shard_of(guild: Option<u64>, total: u64) -> u64 {
    guild.map_or(0, |g| (g >> 22) % total.max(1))
}

#[derive(Default)]
struct State {
    /// Shards identified so far, in order: (shard, total).
    identified: Vec<(u64, u64)>,
    /// Connections that identified and are still open.
    live: Vec<Connection>,
    next_connection: u64,
}

struct Connection {
    id: u64,
    shard: (u64, u64),
    /// The last sequence number sent.
    seq: u64,
    frames: mpsc::UnboundedSender<Message>,
}

/// A running fake gateway.
pub(super) struct Gateway {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    identified: watch::Sender<usize>,
    task: tokio::task::JoinHandle<()>,
}

impl Gateway {
    /// Starts it on a free port of 127.0.0.1; an IDENTIFY must carry `token`.
    pub(super) async fn start(token: &str, bot_user: Value) -> std::io::Result<Gateway> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let (identified, _) = watch::channel(0);
        let session = Session {
            token: token.to_string(),
            bot_user,
            url: format!("ws://{addr}"),
            state: state.clone(),
            identified: identified.clone(),
        };
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(session.clone().serve(stream));
            }
        });
        Ok(Gateway {
            addr,
            state,
            identified,
            task,
        })
    }

    /// The URL `GET /gateway/bot` gives.
    pub(super) fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// Every IDENTIFY so far, in order: (shard, total).
    pub(super) fn identified(&self) -> Vec<(u64, u64)> {
        self.state.lock().expect("fake lock").identified.clone()
    }

    /// Waits until `n` shards identified (at most `within`, then panics).
    pub(super) async fn wait_identified(&self, n: usize, within: std::time::Duration) {
        let mut count = self.identified.subscribe();
        tokio::time::timeout(within, count.wait_for(|c| *c >= n))
            .await
            .unwrap_or_else(|_| panic!("{n} shards did not identify: {:?}", self.identified()))
            .expect("the fake is running");
    }

    /// Sends the event `name` with `data` to every open connection of the shard that `guild`
    /// belongs to; how many it went to.
    pub(super) fn dispatch(&self, guild: Option<u64>, name: &str, data: &Value) -> usize {
        let mut state = self.state.lock().expect("fake lock");
        let mut sent = 0;
        for c in state.live.iter_mut() {
            if c.shard.0 == shard_of(guild, c.shard.1) {
                c.seq += 1;
                let event = json!({"op": 0, "s": c.seq, "t": name, "d": data});
                if c.frames.send(frame(&event)).is_ok() {
                    sent += 1;
                }
            }
        }
        sent
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What each connection needs.
#[derive(Clone)]
struct Session {
    token: String,
    bot_user: Value,
    url: String,
    state: Arc<Mutex<State>>,
    identified: watch::Sender<usize>,
}

impl Session {
    /// One client connection, from the handshake until either side closes.
    async fn serve(self, stream: TcpStream) {
        let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
            return;
        };
        let (mut sink, mut source) = ws.split();
        let (frames, mut outgoing) = mpsc::unbounded_channel::<Message>();
        let writer = tokio::spawn(async move {
            while let Some(frame) = outgoing.recv().await {
                if sink.send(frame).await.is_err() {
                    break;
                }
            }
            let _ = sink.close().await;
        });
        let id = {
            let mut state = self.state.lock().expect("fake lock");
            state.next_connection += 1;
            state.next_connection
        };
        // Heartbeats far apart: a test never waits for one.
        let _ = frames.send(frame(
            &json!({"op": 10, "d": {"heartbeat_interval": 45_000}}),
        ));
        while let Some(Ok(message)) = source.next().await {
            let Message::Text(body) = message else {
                if matches!(message, Message::Close(_)) {
                    break;
                }
                continue;
            };
            let Ok(got) = serde_json::from_str::<Value>(&body) else {
                continue;
            };
            match got["op"].as_u64() {
                // Heartbeat: acknowledged.
                Some(1) => {
                    let _ = frames.send(frame(&json!({"op": 11})));
                }
                // Identify.
                Some(2) => {
                    let given = got["d"]["token"].as_str().unwrap_or("");
                    if given.trim_start_matches("Bot ") != self.token {
                        // As Discord closes it.
                        let _ = frames.send(Message::Close(Some(CloseFrame {
                            code: CloseCode::from(4004),
                            reason: "Authentication failed.".into(),
                        })));
                        break;
                    }
                    let shard = match got["d"]["shard"].as_array().map(|a| a.as_slice()) {
                        Some([s, t]) => (s.as_u64().unwrap_or(0), t.as_u64().unwrap_or(1)),
                        _ => (0, 1),
                    };
                    if shard.0 >= shard.1 {
                        // As Discord closes it (and it is still seen in `identified`).
                        self.state.lock().expect("fake lock").identified.push(shard);
                        let _ = frames.send(Message::Close(Some(CloseFrame {
                            code: CloseCode::from(4010),
                            reason: "Invalid shard.".into(),
                        })));
                        break;
                    }
                    let ready = json!({
                        "op": 0, "s": 1, "t": "READY",
                        "d": {"v": 10, "user": self.bot_user, "guilds": [],
                              "session_id": format!("session-{id}"),
                              "resume_gateway_url": self.url,
                              "shard": [shard.0, shard.1],
                              "application": {"id": super::APPLICATION_ID.to_string(), "flags": 0}}
                    });
                    let n = {
                        let mut state = self.state.lock().expect("fake lock");
                        state.identified.push(shard);
                        state.live.push(Connection {
                            id,
                            shard,
                            seq: 1,
                            frames: frames.clone(),
                        });
                        // READY goes out before any event dispatched after this.
                        let _ = frames.send(frame(&ready));
                        state.identified.len()
                    };
                    self.identified.send_replace(n);
                }
                // Resume: no session survives here; serenity identifies again.
                Some(6) => {
                    let _ = frames.send(frame(&json!({"op": 9, "d": false})));
                }
                // Presence updates, member requests and the rest: nothing to answer.
                _ => {}
            }
        }
        self.forget(id);
        drop(frames);
        let _ = writer.await;
    }

    fn forget(&self, id: u64) {
        self.state
            .lock()
            .expect("fake lock")
            .live
            .retain(|c| c.id != id);
    }
}

fn frame(value: &Value) -> Message {
    Message::Text(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::shard_of;

    #[test]
    fn guilds_go_to_the_shard_discord_names() {
        // Discord's own example: guild 41771983423143937 on shard 0 of 1, and the formula.
        assert_eq!(shard_of(Some(41_771_983_423_143_937), 1), 0);
        assert_eq!(shard_of(Some(3 << 22), 4), 3);
        assert_eq!(shard_of(Some(5 << 22), 4), 1);
        assert_eq!(shard_of(None, 4), 0);
    }
}
