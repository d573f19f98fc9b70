//! Kafka for development and tests, without a broker installation:
//! librdkafka's mock cluster, a real Kafka wire-protocol server (producers,
//! idempotence, consumer groups, offset commits) that lives inside this
//! process and keeps everything in memory.
//!
//! [`MockKafka`] is the bare cluster on an ephemeral loopback port, for tests
//! in one process. [`DevKafka`] hosts it for other processes on a fixed port
//! (`mnemo dev kafka --port 9092`): librdkafka cannot bind a mock broker to a
//! chosen port, so a TCP forwarder listens on the fixed port and the broker
//! *advertises* that port in its metadata. Kafka clients bootstrap, then
//! reconnect to whatever address the metadata names; without the
//! advertisement they would go around the forwarder to the ephemeral port.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rdkafka::bindings as sys;
use rdkafka::client::{Client, DefaultClientContext};
use rdkafka::types::{RDKafkaErrorCode, RDKafkaType};
use rdkafka::ClientConfig;

use crate::{topics, BusError};

/// The id librdkafka gives the first (here: only) mock broker.
const BROKER_ID: i32 = 1;

fn backend(message: impl std::fmt::Display) -> BusError {
    BusError::Backend(message.to_string())
}

/// librdkafka's mock cluster with one broker on an ephemeral loopback port.
/// Dropping it shuts the cluster down; every record and offset is gone.
pub struct MockKafka {
    cluster: NonNull<sys::rd_kafka_mock_cluster_t>,
    /// The client handle the cluster hangs off; destroyed after the cluster.
    _owner: Client<DefaultClientContext>,
    bootstrap_servers: String,
}

// SAFETY: the mock cluster runs on its own thread; every function used on it
// here either posts an operation to that thread and waits for the answer, or
// takes the cluster's lock (`set_host_port`). The pointer is never exposed.
unsafe impl Send for MockKafka {}
unsafe impl Sync for MockKafka {}

impl MockKafka {
    pub fn new() -> Result<Self, BusError> {
        let config = ClientConfig::new();
        let native = config.create_native_config().map_err(backend)?;
        let owner = Client::new(
            &config,
            native,
            RDKafkaType::RD_KAFKA_PRODUCER,
            DefaultClientContext,
        )
        .map_err(backend)?;
        // SAFETY: `owner` is a live client handle and outlives the cluster
        // (the cluster is destroyed in `Drop` before the fields are dropped).
        let raw = unsafe { sys::rd_kafka_mock_cluster_new(owner.native_ptr(), 1) };
        let cluster = NonNull::new(raw)
            .ok_or_else(|| backend("librdkafka could not start a mock cluster"))?;
        // SAFETY: a live cluster; the returned string is owned by the cluster
        // and copied before anything can change it.
        let bootstrap_servers = unsafe {
            CStr::from_ptr(sys::rd_kafka_mock_cluster_bootstraps(cluster.as_ptr()))
                .to_string_lossy()
                .into_owned()
        };
        // A group waits this long for more members before the first
        // assignment (Kafka's group.initial.rebalance.delay.ms, 3 s in the
        // mock). Members of a development or test group join one by one and
        // get their share in the next rebalance anyway.
        // SAFETY: a live cluster; no client has connected yet.
        unsafe { sys::rd_kafka_mock_group_initial_rebalance_delay_ms(cluster.as_ptr(), 0) };
        Ok(MockKafka {
            cluster,
            _owner: owner,
            bootstrap_servers,
        })
    }

    /// Where the broker really listens (an ephemeral loopback port).
    pub fn bootstrap_servers(&self) -> &str {
        &self.bootstrap_servers
    }

    /// Creates a topic (the mock broker has no CreateTopics API, so
    /// [`super::create_topics`] does not work on it). An existing topic is kept.
    pub fn create_topic(&self, name: &str, partitions: i32) -> Result<(), BusError> {
        let name_c = CString::new(name).map_err(backend)?;
        // SAFETY: a live cluster and a NUL-terminated name that outlives the
        // call (the cluster copies it).
        let code = unsafe {
            sys::rd_kafka_mock_topic_create(self.cluster.as_ptr(), name_c.as_ptr(), partitions, 1)
        };
        match RDKafkaErrorCode::from(code) {
            RDKafkaErrorCode::NoError | RDKafkaErrorCode::TopicAlreadyExists => Ok(()),
            code => Err(backend(format!("creating mock topic {name}: {code}"))),
        }
    }

    /// Takes the broker down (closing its connections and refusing new ones)
    /// or brings it back: fault injection for tests.
    pub fn set_broker_up(&self, up: bool) -> Result<(), BusError> {
        // SAFETY: a live cluster; the call posts an operation to the
        // cluster's thread and waits for it.
        let code = unsafe {
            if up {
                sys::rd_kafka_mock_broker_set_up(self.cluster.as_ptr(), BROKER_ID)
            } else {
                sys::rd_kafka_mock_broker_set_down(self.cluster.as_ptr(), BROKER_ID)
            }
        };
        match RDKafkaErrorCode::from(code) {
            RDKafkaErrorCode::NoError => Ok(()),
            code => Err(backend(format!("setting the mock broker up={up}: {code}"))),
        }
    }

    /// Makes the broker tell clients (in its metadata) to connect to
    /// `host:port` instead of its real listener.
    fn advertise(&self, host: &str, port: u16) -> Result<(), BusError> {
        let host_c = CString::new(host).map_err(backend)?;
        // SAFETY: a live cluster; librdkafka copies the host under the
        // cluster's lock.
        unsafe {
            sys::rd_kafka_mock_broker_set_host_port(
                self.cluster.as_ptr(),
                BROKER_ID,
                host_c.as_ptr(),
                i32::from(port),
            )
        };
        Ok(())
    }
}

impl Drop for MockKafka {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, before its owner client.
        unsafe { sys::rd_kafka_mock_cluster_destroy(self.cluster.as_ptr()) };
    }
}

/// A development Kafka that clients in other processes reach on
/// `127.0.0.1:<port>`, with every mnemo topic created. Stays up until dropped.
pub struct DevKafka {
    // Field order is drop order: stop forwarding before the broker goes.
    forwarder: Forwarder,
    mock: MockKafka,
}

impl DevKafka {
    /// Starts the mock broker behind `127.0.0.1:<port>` (0: any free port,
    /// see [`Self::port`]) and creates [`topics::ALL`] with `partitions`
    /// partitions each. Fails if the port is taken.
    pub fn start(port: u16, partitions: i32) -> Result<Self, BusError> {
        // Bind first: a taken port should fail before anything else starts.
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|error| backend(format!("binding 127.0.0.1:{port}: {error}")))?;
        let public = listener.local_addr().map_err(backend)?;
        let mock = MockKafka::new()?;
        let broker: SocketAddr = mock
            .bootstrap_servers()
            .split(',')
            .next()
            .and_then(|address| address.parse().ok())
            .ok_or_else(|| {
                backend(format!(
                    "unexpected mock bootstrap list {}",
                    mock.bootstrap_servers()
                ))
            })?;
        mock.advertise("127.0.0.1", public.port())?;
        // Topics before the first accept: a service started alongside (as
        // the scale-out recipe does, `mnemo dev kafka &` then the services)
        // may connect at once. Its connection waits in the listener's backlog
        // until every topic exists; accepted earlier, it would find some
        // missing and ask this broker, which has no CreateTopics API, to
        // create them.
        for topic in topics::ALL {
            mock.create_topic(topic, partitions)?;
        }
        let forwarder = Forwarder::start(listener, broker).map_err(backend)?;
        tracing::info!(bootstrap = %public, broker = %broker, partitions, "development kafka is up");
        Ok(DevKafka { forwarder, mock })
    }

    pub fn port(&self) -> u16 {
        self.forwarder.public.port()
    }

    /// What clients put in `bootstrap.servers`.
    pub fn bootstrap_servers(&self) -> String {
        self.forwarder.public.to_string()
    }

    /// Creates a further topic (tests, experiments).
    pub fn create_topic(&self, name: &str, partitions: i32) -> Result<(), BusError> {
        self.mock.create_topic(name, partitions)
    }

    /// Client connections accepted on the public port so far.
    pub fn forwarded_connections(&self) -> u64 {
        self.forwarder.accepted.load(Ordering::Relaxed)
    }
}

/// Copies bytes both ways between each client connection on the public port
/// and the broker's real listener. Plain threads: a development host has a
/// handful of connections, and this works under any runtime or none.
struct Forwarder {
    public: SocketAddr,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    /// Both sockets of each open connection, so stopping can cut them.
    connections: Arc<Mutex<HashMap<u64, [TcpStream; 2]>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Forwarder {
    fn start(listener: TcpListener, broker: SocketAddr) -> io::Result<Self> {
        let public = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let connections: Arc<Mutex<HashMap<u64, [TcpStream; 2]>>> = Arc::default();
        let acceptor = std::thread::Builder::new()
            .name("dev-kafka-accept".to_owned())
            .spawn({
                let (stop, accepted, connections) =
                    (stop.clone(), accepted.clone(), connections.clone());
                move || {
                    for client in listener.incoming() {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let id = accepted.fetch_add(1, Ordering::Relaxed);
                        match client.and_then(|client| connect(client, broker)) {
                            Ok(pair) => pipe(id, pair, &connections),
                            Err(error) => {
                                tracing::warn!(error = %error, "dev kafka: dropping a connection")
                            }
                        }
                    }
                }
            })?;
        Ok(Forwarder {
            public,
            stop,
            accepted,
            connections,
            acceptor: Some(acceptor),
        })
    }
}

fn connect(client: TcpStream, broker: SocketAddr) -> io::Result<[TcpStream; 2]> {
    let upstream = TcpStream::connect(broker)?;
    // Kafka requests are small and latency-bound.
    client.set_nodelay(true)?;
    upstream.set_nodelay(true)?;
    Ok([client, upstream])
}

/// Two threads per connection, one per direction. When either direction ends,
/// both sockets are shut down so the other thread ends too.
fn pipe(id: u64, pair: [TcpStream; 2], connections: &Arc<Mutex<HashMap<u64, [TcpStream; 2]>>>) {
    let clones =
        || -> io::Result<[TcpStream; 2]> { Ok([pair[0].try_clone()?, pair[1].try_clone()?]) };
    let (Ok([client_read, upstream_write]), Ok([client_write, upstream_read])) =
        (clones(), clones())
    else {
        return;
    };
    connections.lock().expect("lock poisoned").insert(id, pair);
    for (name, mut from, mut to) in [
        ("dev-kafka-up", client_read, upstream_write),
        ("dev-kafka-down", upstream_read, client_write),
    ] {
        let registry = connections.clone();
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let _ = io::copy(&mut from, &mut to);
                cut(&registry, id);
            });
        if spawned.is_err() {
            // Without both directions the connection is useless: cut it, and
            // the client reconnects.
            cut(connections, id);
        }
    }
}

/// Shuts both sockets of a connection down (ending both of its threads) and
/// forgets it. The second caller finds nothing to do.
fn cut(connections: &Mutex<HashMap<u64, [TcpStream; 2]>>, id: u64) {
    if let Some(sockets) = connections.lock().expect("lock poisoned").remove(&id) {
        for socket in sockets {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect(self.public);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for (_, sockets) in self.connections.lock().expect("lock poisoned").drain() {
            for socket in sockets {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }
}
