//! `mnemo dev kafka`: a Kafka for development on one fixed port, without
//! installing a broker. It hosts librdkafka's mock cluster (the Kafka wire
//! protocol, in memory) with every mnemo topic created, so the scale-out
//! services, tests or tools in other processes can bootstrap on
//! `127.0.0.1:<port>`. Everything is lost when it stops.

use mnemo_bus::kafka::dev::DevKafka;
use mnemo_bus::topics;

/// Starts the development Kafka, prints its bootstrap address and serves
/// until Ctrl-C.
pub async fn run(port: u16, partitions: i32) -> anyhow::Result<()> {
    anyhow::ensure!(
        partitions > 0,
        "partitions must be at least 1, got {partitions}"
    );
    // Starting the mock cluster and binding the port are short blocking calls.
    let host = tokio::task::spawn_blocking(move || DevKafka::start(port, partitions)).await??;
    println!("kafka bootstrap: {}", host.bootstrap_servers());
    println!(
        "topics ({partitions} partitions each): {}",
        topics::ALL.join(", ")
    );
    println!("in memory only; Ctrl-C stops it and discards every record and offset");
    tokio::signal::ctrl_c().await?;
    // Stopping joins the forwarder and shuts the cluster down: blocking too.
    tokio::task::spawn_blocking(move || drop(host)).await?;
    Ok(())
}
