"""CPU tests of the Hopper host helpers: argument checks, struct layouts, parameter packing and the driver's error
path, with a stand-in for libcuda (no GPU needed)."""

import ctypes

import numpy as np
import pytest

from gemmprof.errors import InputError
from gemmprof.measure import hopper_host as hh


class FakeLib:
    """Records cuTensorMapEncodeTiled / cuLaunchKernelEx arguments and returns a chosen CUresult."""

    def __init__(self, code=0):
        self.code = code
        self.calls = []

    def cuTensorMapEncodeTiled(self, out, dtype, rank, addr, dims, strides, box, elem, inter, swz, l2, oob):
        self.calls.append(dict(dtype=dtype.value, rank=rank.value, addr=addr.value, dims=list(dims),
                               strides=list(strides), box=list(box), elem=list(elem), swizzle=swz.value,
                               l2=l2.value, out=out.value))
        ctypes.memset(out.value, 0xAB, hh.TENSOR_MAP_BYTES)
        return self.code

    def cuLaunchKernelEx(self, cfg_ref, func, params, extra):
        cfg = ctypes.cast(cfg_ref, ctypes.POINTER(hh.LaunchConfig)).contents
        self.calls.append(dict(grid=(cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ), num_attrs=cfg.numAttrs,
                               attr=cfg.attrs[0] if cfg.numAttrs else None, func=func.value,
                               first=ctypes.cast(params[0], ctypes.POINTER(ctypes.c_int32)).contents.value))
        return self.code

    def cuGetErrorName(self, code, out):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"CUDA_ERROR_INVALID_VALUE"
        return 0

    def cuGetErrorString(self, code, out):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"invalid argument"
        return 0


def test_structs_match_cuda_h_layout():
    assert ctypes.sizeof(hh.LaunchAttribute) == 72
    assert hh.LaunchAttribute.value.offset == 8
    assert ctypes.sizeof(hh.LaunchConfig) == 56
    assert hh.LaunchConfig.hStream.offset == 32
    assert hh.LaunchConfig.numAttrs.offset == 48


def test_encode_passes_innermost_dimension_first_and_returns_128_bytes():
    lib = FakeLib()
    m = hh.encode_tiled(0x10000, hh.TiledMap("bf16", rows=4095, cols=1024, box_rows=128, box_cols=64),
                        hh.Driver(lib))
    call = lib.calls[0]
    assert call["dtype"] == 9 and call["rank"] == 2 and call["addr"] == 0x10000
    assert call["dims"] == [1024, 4095] and call["strides"] == [2048] and call["box"] == [64, 128]
    assert call["elem"] == [1, 1] and call["swizzle"] == 3 and call["l2"] == 3
    assert call["out"] % 64 == 0
    assert isinstance(m, np.void) and m.dtype.itemsize == 128 and bytes(m) == b"\xab" * 128


def test_encode_reports_the_driver_error_by_name():
    with pytest.raises(hh.DriverError, match="cuTensorMapEncodeTiled .*CUDA_ERROR_INVALID_VALUE: invalid argument"):
        hh.encode_tiled(0x10000, hh.TiledMap("fp16", 256, 256, 64, 64), hh.Driver(FakeLib(code=1)))


@pytest.mark.parametrize("tmap, match", [
    (hh.TiledMap("fp16", 64, 1001, 64, 64), r"multiple of 8 \(nearest valid: 1000 or 1008\)"),
    (hh.TiledMap("fp16", 64, 4, 64, 64), r"nearest valid: 8\)"),
    (hh.TiledMap("fp16", 64, 1024, 512, 64), "exceeds 256"),
    (hh.TiledMap("fp16", 64, 1024, 64, 4), "multiple of 16 bytes"),
    (hh.TiledMap("fp32", 64, 1024, 64, 64), "at most 128 bytes"),
    (hh.TiledMap("fp16", 64, 1024, 64, 64, swizzle=96), "swizzle must be one of"),
    (hh.TiledMap("int8", 64, 1024, 64, 64), "not one of"),
    (hh.TiledMap("fp16", 0, 1024, 64, 64), "rows must be a positive integer"),
])
def test_invalid_maps_are_refused_before_the_driver(tmap, match):
    lib = FakeLib()
    with pytest.raises(InputError, match=match):
        hh.encode_tiled(0x10000, tmap, hh.Driver(lib))
    assert lib.calls == []


def test_misaligned_or_null_address_is_refused():
    with pytest.raises(InputError, match="16-byte aligned"):
        hh.encode_tiled(0x10008, hh.TiledMap("fp16", 64, 64, 64, 64), hh.Driver(FakeLib()))
    with pytest.raises(InputError, match="device pointer"):
        hh.encode_tiled(0, hh.TiledMap("fp16", 64, 64, 64, 64), hh.Driver(FakeLib()))


class FakeArray:
    class data:
        ptr = 0xDEAD0000


def test_pack_params_points_at_each_argument_by_value():
    tmap = np.frombuffer(bytes(range(128)), dtype=np.dtype((np.void, 128)))[0]
    params, holders = hh.pack_params([np.int32(-7), np.float32(1.5), FakeArray(), tmap])
    assert ctypes.cast(params[0], ctypes.POINTER(ctypes.c_int32)).contents.value == -7
    assert ctypes.cast(params[1], ctypes.POINTER(ctypes.c_float)).contents.value == 1.5
    assert ctypes.cast(params[2], ctypes.POINTER(ctypes.c_uint64)).contents.value == 0xDEAD0000
    assert ctypes.string_at(params[3], 128) == bytes(range(128))


@pytest.mark.parametrize("bad", [3, 1.0, np.float64(1.0), "x"])
def test_pack_params_refuses_ambiguous_types(bad):
    with pytest.raises(InputError, match="argument 0"):
        hh.pack_params([bad])


def test_cluster_launch_sets_the_cluster_attribute():
    lib = FakeLib()
    hh.prepare_launch(0x1234, (132, 1, 1), (384, 1, 1), [np.int32(42)], shared_mem=197632, cluster=(2, 1, 1),
                      drv=hh.Driver(lib))()
    call = lib.calls[0]
    assert call["grid"] == (132, 1, 1) and call["func"] == 0x1234 and call["first"] == 42
    assert call["num_attrs"] == 1 and call["attr"].id == hh.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert list((ctypes.c_uint * 3).from_buffer_copy(bytes(call["attr"].value)[:12])) == [2, 1, 1]


def test_a_prepared_launch_packs_once_and_calls_the_driver_alone(monkeypatch):
    lib, packed = FakeLib(), []
    pack = hh.pack_params
    monkeypatch.setattr(hh, "pack_params", lambda args: packed.append(args) or pack(args))
    launch = hh.prepare_launch(0x1234, (132, 1, 1), (384, 1, 1), [np.int32(42)], shared_mem=197632,
                               cluster=(2, 1, 1), drv=hh.Driver(lib))
    assert lib.calls == [] and len(packed) == 1  # nothing launched while preparing
    for _ in range(3):
        launch()
    assert len(packed) == 1 and len(lib.calls) == 3  # three driver calls, the arguments packed once
    assert all(c["grid"] == (132, 1, 1) and c["first"] == 42 and c["num_attrs"] == 1 for c in lib.calls)


def test_plain_launch_has_no_attributes():
    lib = FakeLib()
    hh.prepare_launch(0x1234, 10, 128, [np.int32(1)], drv=hh.Driver(lib))()
    assert lib.calls[0]["num_attrs"] == 0 and lib.calls[0]["grid"] == (10, 1, 1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid=(131, 1, 1), cluster=(2, 1, 1)), "must divide the grid"),
    (dict(grid=(160, 1, 1), cluster=(16, 1, 1)), "portable limit"),
    (dict(grid=(0, 1, 1)), "positive integers"),
    (dict(grid=(4, 1, 1), block=(1024, 2, 1)), "more than 1024 threads"),
])
def test_launch_checks_geometry_before_the_driver(kwargs, match):
    lib = FakeLib()
    args = dict(block=(128, 1, 1)) | kwargs
    with pytest.raises(InputError, match=match):
        hh.prepare_launch(0x1234, args.pop("grid"), args.pop("block"), [np.int32(1)], drv=hh.Driver(lib), **args)
    assert lib.calls == []


def test_launch_error_names_the_call():
    with pytest.raises(hh.DriverError, match="cuLaunchKernelEx.*cluster \\(2, 1, 1\\).*CUDA_ERROR_INVALID_VALUE"):
        hh.prepare_launch(0x1234, 4, 128, [np.int32(1)], cluster=(2, 1, 1), drv=hh.Driver(FakeLib(code=1)))()


def test_missing_driver_library_is_a_clear_error(monkeypatch):
    def fail(name):
        raise OSError(f"{name}: cannot open shared object file")
    monkeypatch.setattr(ctypes, "CDLL", fail)
    with pytest.raises(hh.GpuUnavailableError, match="libcuda.so.1 could not be loaded"):
        hh.Driver()
