//! What a device runs at once of a launch's shape: [`Occupancy`].

/// How many blocks of a launch's shape (its block size, dynamic shared memory and cluster) a
/// device runs at once, from [`Program::occupancy`](crate::Program::occupancy): what a
/// persistent kernel sizes its grid by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// Blocks of the shape that one multiprocessor runs at once (0: the shape does not fit).
    pub blocks_per_multiprocessor: u32,
    /// The device's multiprocessors.
    pub multiprocessors: u32,
    /// With [`Launch::cluster`](crate::Launch::cluster), the clusters of the shape the whole
    /// device runs at once (`cuOccupancyMaxActiveClusters`): fewer than the multiprocessors
    /// could hold when the clusters do not tile the GPCs.
    pub clusters: Option<u32>,
}
