//! Launch configurations: grid and block sizes, dynamic shared memory, stream, clusters.

use crate::error::{BadExtent, Error, Result};
use crate::kind::Device;
use crate::stream::Stream;

/// Three extents (`x`, `y`, `z`), each at least 1: a grid in blocks or a block in threads. One
/// type for every backend (chorus-cuda's, which the CUDA launch takes as it is).
pub use chorus_cuda::Dim3;

/// Something that names launch extents: `n`, `(x, y)` or `(x, y, z)` of `u32`, `i32`, `u64` or
/// `usize` (missing extents are 1), or a [`Dim3`]. The conversion is checked when the kernel is
/// launched: every extent must be between 1 and `u32::MAX`.
pub trait IntoDim3 {
    /// The extents, or the one that does not fit in a `u32`.
    fn into_dim3(self) -> std::result::Result<Dim3, BadExtent>;
}

impl IntoDim3 for Dim3 {
    fn into_dim3(self) -> std::result::Result<Dim3, BadExtent> {
        Ok(self)
    }
}

macro_rules! into_dim3 {
    ($($int:ty),*) => {$(
        impl IntoDim3 for $int {
            fn into_dim3(self) -> std::result::Result<Dim3, BadExtent> {
                // Every integer type named below fits in an `i128`.
                u32::try_from(self).map_err(|_| BadExtent(self as i128))
                    .map(|x| Dim3::new(x, 1, 1))
            }
        }
        impl IntoDim3 for ($int, $int) {
            fn into_dim3(self) -> std::result::Result<Dim3, BadExtent> {
                Ok(Dim3::new(self.0.into_dim3()?.x, self.1.into_dim3()?.x, 1))
            }
        }
        impl IntoDim3 for ($int, $int, $int) {
            fn into_dim3(self) -> std::result::Result<Dim3, BadExtent> {
                Ok(Dim3::new(self.0.into_dim3()?.x, self.1.into_dim3()?.x, self.2.into_dim3()?.x))
            }
        }
        impl IntoDim3 for [$int; 3] {
            fn into_dim3(self) -> std::result::Result<Dim3, BadExtent> {
                (self[0], self[1], self[2]).into_dim3()
            }
        }
    )*};
}

into_dim3!(u32, i32, u64, usize);

/// How a kernel is launched: the grid (in blocks), the block (in threads), the bytes of dynamic
/// shared memory (`with-dynamic-shared-memory`), the stream, and the blocks of a thread-block
/// cluster (CUDA on sm_90 and newer).
///
/// ```
/// # use chorus::Launch;
/// let n = 1000u32;
/// let launch = Launch::grid(n.div_ceil(256)).block(256);
/// let tiled = Launch::grid((16, 16)).block((16, 16, 1)).shared_mem(18 * 18 * 4);
/// # let _ = (launch, tiled);
/// ```
///
/// The defaults are cl-cuda's: a grid of one block of one thread, no dynamic shared memory, and
/// the device's default stream, on the current device ([`crate::current_device`]).
///
/// A launch runs on the device [`Launch::on`] names, else on its stream's device, else on the
/// current device; its memory arguments must be on that device.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    grid: std::result::Result<Dim3, BadExtent>,
    block: std::result::Result<Dim3, BadExtent>,
    shared_mem: u32,
    stream: Option<&'a Stream>,
    device: Option<Device>,
    cluster: Option<std::result::Result<Dim3, BadExtent>>,
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Launch {
            grid: Ok(Dim3::new(1, 1, 1)),
            block: Ok(Dim3::new(1, 1, 1)),
            shared_mem: 0,
            stream: None,
            device: None,
            cluster: None,
        }
    }
}

impl<'a> Launch<'a> {
    /// A launch of `grid` blocks (of one thread each until [`Launch::block`] says otherwise).
    pub fn grid(grid: impl IntoDim3) -> Launch<'a> {
        Launch {
            grid: grid.into_dim3(),
            ..Launch::default()
        }
    }

    /// Sets the threads per block.
    pub fn block(mut self, block: impl IntoDim3) -> Launch<'a> {
        self.block = block.into_dim3();
        self
    }

    /// Sets the bytes of dynamic shared memory (`:shared-mem`).
    pub fn shared_mem(mut self, bytes: u32) -> Launch<'a> {
        self.shared_mem = bytes;
        self
    }

    /// Launches on `stream` instead of the default stream (`:stream`).
    pub fn stream(mut self, stream: &'a Stream) -> Launch<'a> {
        self.stream = Some(stream);
        self
    }

    /// Runs the launch on `device` (its stream, if any, must be on it too).
    pub fn on(mut self, device: Device) -> Launch<'a> {
        self.device = Some(device);
        self
    }

    /// Groups the blocks into thread-block clusters of `cluster` blocks (CUDA, compute
    /// capability 9.0 and newer: `cuLaunchKernelEx`); the grid must be a multiple of it in
    /// every dimension. The blocks of a cluster run at once on one GPC and reach each other's
    /// shared memory (`cluster-rank`, `cluster-barrier`, `mbarrier-arrive-cluster`, the TMA's
    /// multicast). Other backends refuse a cluster of more than one block.
    pub fn cluster(mut self, cluster: impl IntoDim3) -> Launch<'a> {
        self.cluster = Some(cluster.into_dim3());
        self
    }

    /// The cluster, if one was given, or the error its extents give.
    pub fn cluster_dim(&self) -> Result<Option<Dim3>> {
        self.cluster
            .transpose()
            .map_err(|source| Error::InvalidExtent {
                dimension: "cluster",
                source,
            })
    }

    /// The grid, or the error its extents give.
    pub fn grid_dim(&self) -> Result<Dim3> {
        self.grid.map_err(|source| Error::InvalidExtent {
            dimension: "grid",
            source,
        })
    }

    /// The block, or the error its extents give.
    pub fn block_dim(&self) -> Result<Dim3> {
        self.block.map_err(|source| Error::InvalidExtent {
            dimension: "block",
            source,
        })
    }

    /// Bytes of dynamic shared memory.
    pub fn shared_mem_bytes(&self) -> u32 {
        self.shared_mem
    }

    /// The stream, if one was given.
    pub fn stream_ref(&self) -> Option<&'a Stream> {
        self.stream
    }

    /// The device [`Launch::on`] named, if any.
    pub fn device(&self) -> Option<Device> {
        self.device
    }

    /// The checked configuration: every extent at least 1.
    pub(crate) fn checked(&self) -> Result<(Dim3, Dim3)> {
        let (grid, block) = (self.grid_dim()?, self.block_dim()?);
        for (dimension, extents) in [("grid", grid), ("block", block)] {
            if extents.volume() == 0 {
                return Err(Error::ZeroExtent { dimension, extents });
            }
        }
        Ok((grid, block))
    }

    /// The checked cluster of a launch of `grid`: `None` without one, else extents of at least
    /// 1 that divide the grid's.
    pub(crate) fn checked_cluster(&self, grid: Dim3) -> Result<Option<Dim3>> {
        let Some(cluster) = self.cluster_dim()? else {
            return Ok(None);
        };
        if cluster.volume() == 0 {
            return Err(Error::ZeroExtent {
                dimension: "cluster",
                extents: cluster,
            });
        }
        let divides = grid.x.is_multiple_of(cluster.x)
            && grid.y.is_multiple_of(cluster.y)
            && grid.z.is_multiple_of(cluster.z);
        if !divides {
            return Err(Error::ClusterShape { grid, cluster });
        }
        Ok(Some(cluster))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_from_integers_and_tuples() {
        let launch = Launch::grid(4).block((16, 16));
        assert_eq!(
            launch.checked().unwrap(),
            (Dim3::new(4, 1, 1), Dim3::new(16, 16, 1))
        );
        let launch = Launch::grid((2usize, 3usize, 4usize))
            .block([8u64, 1, 1])
            .shared_mem(64);
        assert_eq!(
            launch.checked().unwrap(),
            (Dim3::new(2, 3, 4), Dim3::new(8, 1, 1))
        );
        assert_eq!(launch.shared_mem_bytes(), 64);
        assert_eq!(
            Launch::default().checked().unwrap(),
            (Dim3::new(1, 1, 1), Dim3::new(1, 1, 1))
        );
    }

    #[test]
    fn clusters_must_divide_the_grid() {
        let launch = Launch::grid((8, 2)).block(32);
        assert_eq!(launch.checked_cluster(Dim3::new(8, 2, 1)).unwrap(), None);
        let paired = launch.clone().cluster(2);
        assert_eq!(
            paired.checked_cluster(Dim3::new(8, 2, 1)).unwrap(),
            Some(Dim3::new(2, 1, 1))
        );
        let odd = launch.clone().cluster((3, 1));
        let e = odd.checked_cluster(Dim3::new(8, 2, 1)).unwrap_err();
        assert!(matches!(e, Error::ClusterShape { .. }), "{e}");
        assert!(e.to_string().contains("(3, 1, 1)"), "{e}");
        let zero = launch.clone().cluster((2, 0));
        assert!(matches!(
            zero.checked_cluster(Dim3::new(8, 2, 1)).unwrap_err(),
            Error::ZeroExtent {
                dimension: "cluster",
                ..
            }
        ));
        let negative = launch.cluster(-2);
        assert!(
            negative
                .checked_cluster(Dim3::new(8, 2, 1))
                .unwrap_err()
                .to_string()
                .contains("cluster: -2 is not an extent")
        );
    }

    #[test]
    fn bad_extents_are_errors_at_launch() {
        let negative = Launch::grid(-1).block(32);
        assert!(
            negative
                .checked()
                .unwrap_err()
                .to_string()
                .contains("grid: -1 is not an extent")
        );
        let zero = Launch::grid(1).block((32, 0));
        assert!(
            zero.checked()
                .unwrap_err()
                .to_string()
                .contains("block (32, 0, 1) has an extent of 0")
        );
        let huge = Launch::grid(u64::MAX);
        assert!(matches!(
            huge.checked(),
            Err(Error::InvalidExtent {
                dimension: "grid",
                source: BadExtent(v),
            }) if v == i128::from(u64::MAX)
        ));
    }
}
