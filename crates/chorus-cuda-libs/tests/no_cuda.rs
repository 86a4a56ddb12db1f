//! Without the CUDA libraries (this CPU-only machine), every library says so: `is_available`
//! is false and every handle is `LibraryNotFound` naming the library and what was searched,
//! with no panic. Where a library is present, the two agree.

use chorus_cuda_libs::{Error, Library, cublas, cublaslt, cufft, curand, cusolver, cusparse};
use chorus_driver::Stream;

fn libraries() -> [(&'static Library, &'static str, bool); 6] {
    [
        (&cublas::LIBRARY, "cuBLAS", cublas::is_available()),
        (&cublaslt::LIBRARY, "cuBLASLt", cublaslt::is_available()),
        (&cufft::LIBRARY, "cuFFT", cufft::is_available()),
        (&curand::LIBRARY, "cuRAND", curand::is_available()),
        (&cusolver::LIBRARY, "cuSOLVER", cusolver::is_available()),
        (&cusparse::LIBRARY, "cuSPARSE", cusparse::is_available()),
    ]
}

#[test]
fn every_library_is_available_or_not_found_with_what_was_searched() {
    for (library, name, available) in libraries() {
        assert_eq!(library.display_name, name);
        assert_eq!(library.is_available(), available);
        match library.ensure() {
            Ok(()) => assert!(available, "{name}"),
            Err(Error::LibraryNotFound { library, searched }) => {
                assert!(!available, "{name}");
                assert_eq!(library, name);
                assert!(!searched.is_empty(), "{name}");
                let e = library.to_string();
                assert!(!e.is_empty());
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
}

#[test]
fn missing_libraries_make_no_handles() {
    let stream = Stream::null();
    let not_found = |r: Result<(), Error>, name: &str, available: bool| match r {
        Err(Error::LibraryNotFound { library, searched }) => {
            assert!(!available, "{name} is available yet not found");
            assert_eq!(library, name);
            assert!(
                searched.contains("lib") || searched.starts_with("it needs"),
                "{searched}"
            );
        }
        // Present: the handle fails for another reason (no context here) or succeeds.
        _ => assert!(available, "{name}: absent but not LibraryNotFound"),
    };
    not_found(
        cublas::Blas::new(&stream).map(drop),
        "cuBLAS",
        cublas::is_available(),
    );
    not_found(
        cublaslt::BlasLt::new(&stream).map(drop),
        "cuBLASLt",
        cublaslt::is_available(),
    );
    let shape = cufft::PlanShape::new(&[8], cufft::FftKind::C2C, cufft::Precision::Single, 1);
    not_found(
        cufft::Plan::new(shape, &stream).map(drop),
        "cuFFT",
        cufft::is_available(),
    );
    not_found(
        curand::Generator::new(curand::RngKind::Philox4x32_10, &stream).map(drop),
        "cuRAND",
        curand::is_available(),
    );
    not_found(
        cusolver::Solver::new(&stream).map(drop),
        "cuSOLVER",
        cusolver::is_available(),
    );
    not_found(
        cusparse::Sparse::new(&stream).map(drop),
        "cuSPARSE",
        cusparse::is_available(),
    );
}

#[test]
fn the_searched_places_include_the_toolkit_directories() {
    if cufft::is_available() {
        return;
    }
    let Err(Error::LibraryNotFound { searched, .. }) = cufft::LIBRARY.ensure() else {
        panic!("cuFFT absent but not LibraryNotFound");
    };
    assert!(searched.contains("libcufft.so"), "{searched}");
    for dir in chorus_driver::loader::driver_dirs() {
        assert!(
            searched.contains(&dir.display().to_string()),
            "{} not in {searched}",
            dir.display()
        );
    }
}

#[test]
fn cudnn_is_available_or_not_found_and_makes_no_handle_without_it() {
    use chorus_cuda_libs::cudnn;
    let available = cudnn::is_available();
    match cudnn::ensure() {
        Ok(()) => assert!(available),
        Err(Error::LibraryNotFound { library, searched }) => {
            assert!(!available);
            assert_eq!(library, "cuDNN");
            assert!(
                searched.contains("libcudnn.so") || searched.contains("cuDNN version"),
                "{searched}"
            );
        }
        Err(e) => panic!("cuDNN: {e}"),
    }
    let stream = Stream::null();
    match cudnn::Dnn::new(&stream) {
        Err(Error::LibraryNotFound { library, .. }) => {
            assert!(!available);
            assert_eq!(library, "cuDNN");
        }
        // Present: the handle fails for another reason (no context here) or succeeds.
        _ => assert!(available, "cuDNN absent but not LibraryNotFound"),
    }
    // Descriptors need the library too, and say so without it.
    let desc = cudnn::TensorDesc::<f32>::new(cudnn::Layout::Nhwc, 1, 2, 3, 4);
    assert_eq!(desc.is_ok(), available);
}

#[test]
fn nccl_is_searched_by_its_own_soname_where_the_others_are() {
    if chorus_cuda_libs::nccl::is_available() {
        return;
    }
    let Err(Error::LibraryNotFound { library, searched }) = chorus_cuda_libs::nccl::ensure() else {
        panic!("NCCL absent but not LibraryNotFound");
    };
    assert_eq!(library, "NCCL");
    // The soname first, and the toolkit directories every library is searched in.
    let soname = searched.find("libnccl.so.2").expect(&searched);
    assert!(
        searched.find("libnccl.so,").is_none_or(|i| i > soname),
        "{searched}"
    );
    for dir in chorus_driver::loader::driver_dirs() {
        assert!(
            searched.contains(&dir.display().to_string()),
            "{} not in {searched}",
            dir.display()
        );
    }
}
