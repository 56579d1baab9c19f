"""CPU tests of the Hopper host helpers: argument checks, the binding's enums and structs as passed, parameter packing
and the driver's error path, with a stand-in for `cuda.bindings.driver` (no GPU needed); and, where cuda-bindings is
installed, the real binding taking our arguments up to the driver call."""

import ctypes
import enum
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from context import from_test_extra

from gemmprof.errors import GpuUnavailableError, InputError
from gemmprof.measure import hopper_host as hh

SOURCE = Path(hh.__file__).read_text()


def _enum(name, members, start):
    """An enum of the binding's member names with values unlike cuda.h's (from `start`): code that typed a value
    instead of using the member would pass the wrong number."""
    return enum.IntEnum(name, {m: start + i for i, m in enumerate(members)})


class _Word:
    def __init__(self, v):
        if not isinstance(v, int) or v < 0:
            raise TypeError(f"Cannot convert {type(v).__name__} to {type(self).__name__}")
        self.v = v

    def __int__(self):
        return self.v


class FakeDriver(types.SimpleNamespace):
    """A stand-in for cuda.bindings.driver: its enums, structs and the four calls gemmprof makes, recording them."""

    def __init__(self, code=0, missing_lib=False):
        cu64 = type("cuuint64_t", (_Word,), {})
        cu32 = type("cuuint32_t", (_Word,), {})
        super().__init__(
            code=code, missing_lib=missing_lib, calls=[], cuuint64_t=cu64, cuuint32_t=cu32,
            CUresult=enum.IntEnum("CUresult", {"CUDA_SUCCESS": 0, "CUDA_ERROR_INVALID_VALUE": 1}),
            CUtensorMapDataType=_enum("CUtensorMapDataType", ["CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
                                      "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"], 100),
            CUtensorMapSwizzle=_enum("CUtensorMapSwizzle", [
                "CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_SWIZZLE_32B", "CU_TENSOR_MAP_SWIZZLE_64B",
                "CU_TENSOR_MAP_SWIZZLE_128B"], 200),
            CUtensorMapL2promotion=_enum("CUtensorMapL2promotion", [
                "CU_TENSOR_MAP_L2_PROMOTION_NONE", "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
                "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"], 300),
            CUtensorMapInterleave=_enum("CUtensorMapInterleave", ["CU_TENSOR_MAP_INTERLEAVE_NONE"], 400),
            CUtensorMapFloatOOBfill=_enum("CUtensorMapFloatOOBfill", ["CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"], 500),
            CUlaunchAttributeID=_enum("CUlaunchAttributeID", ["CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION"], 600),
        )

    @staticmethod
    def CUlaunchConfig():
        return types.SimpleNamespace()

    @staticmethod
    def CUlaunchAttribute():
        return types.SimpleNamespace(id=None, value=types.SimpleNamespace(clusterDim=types.SimpleNamespace()))

    @staticmethod
    def CUstream(v):
        return ("CUstream", v)

    @staticmethod
    def CUfunction(v):
        return ("CUfunction", v)

    def _result(self):
        if self.missing_lib:
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')
        return self.CUresult(self.code)

    def cuTensorMapEncodeTiled(self, dtype, rank, addr, dims, strides, box, elem, inter, swz, l2, oob):
        for words, kind in ((dims, self.cuuint64_t), (strides, self.cuuint64_t), (box, self.cuuint32_t),
                            (elem, self.cuuint32_t)):
            assert all(isinstance(w, kind) for w in words), (words, kind)  # the binding converts nothing else
        self.calls.append(dict(dtype=dtype, rank=rank, addr=addr, dims=[int(d) for d in dims],
                               strides=[int(s) for s in strides], box=[int(b) for b in box],
                               elem=[int(e) for e in elem], interleave=inter, swizzle=swz, l2=l2, oob=oob))
        opaque = [self.cuuint64_t(0x0102030405060708 + i) for i in range(16)]
        return self._result(), types.SimpleNamespace(opaque=opaque)

    def cuLaunchKernelEx(self, cfg, func, params, extra):
        pointers = (ctypes.c_void_p * 1).from_address(params)
        self.calls.append(dict(grid=(cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ), smem=cfg.sharedMemBytes,
                               stream=cfg.hStream, num_attrs=cfg.numAttrs, attrs=list(cfg.attrs), func=func,
                               first=ctypes.c_int32.from_address(pointers[0]).value, extra=extra))
        return (self._result(),)

    def cuOccupancyMaxActiveClusters(self, func, cfg):
        self.calls.append(dict(occupancy=True, grid=(cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ),
                               block=(cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ), smem=cfg.sharedMemBytes,
                               attrs=list(cfg.attrs), func=func))
        return self._result(), 30

    def cuGetErrorString(self, code):
        return self.CUresult.CUDA_SUCCESS, b"invalid argument"


def test_encode_passes_innermost_dimension_first_and_returns_the_maps_128_bytes():
    cu = FakeDriver()
    m = hh.encode_tiled(0x10000, hh.TiledMap("bf16", rows=4095, cols=1024, box_rows=128, box_cols=64), hh.Driver(cu))
    call = cu.calls[0]
    assert call["rank"] == 2 and call["addr"] == 0x10000
    assert call["dims"] == [1024, 4095] and call["strides"] == [2048] and call["box"] == [64, 128]
    assert call["elem"] == [1, 1]
    assert call["swizzle"] is cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    assert call["l2"] is cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B
    assert call["interleave"] is cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    assert call["oob"] is cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    assert isinstance(m, np.void) and m.dtype.itemsize == 128
    assert bytes(m) == b"".join((0x0102030405060708 + i).to_bytes(8, "little") for i in range(16))


@pytest.mark.parametrize("dtype, member", [("fp16", "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"),
                                           ("bf16", "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"),
                                           ("fp32", "CU_TENSOR_MAP_DATA_TYPE_FLOAT32")])
def test_each_dtype_is_the_bindings_own_enum_member(dtype, member):
    cu = FakeDriver()
    hh.encode_tiled(0x10000, hh.TiledMap(dtype, 256, 256, 64, 32), hh.Driver(cu))
    assert cu.calls[0]["dtype"] is getattr(cu.CUtensorMapDataType, member)


@pytest.mark.parametrize("width", [0, 32, 64, 128])
def test_swizzle_and_l2_promotion_widths_are_the_bindings_members(width):
    cu = FakeDriver()
    hh.encode_tiled(0x10000, hh.TiledMap("fp16", 256, 256, 64, 16, swizzle=width, l2_promotion=max(width, 64)),
                    hh.Driver(cu))
    swz, l2 = cu.calls[0]["swizzle"], cu.calls[0]["l2"]
    assert swz.name == ("CU_TENSOR_MAP_SWIZZLE_NONE" if width == 0 else f"CU_TENSOR_MAP_SWIZZLE_{width}B")
    assert l2.name == f"CU_TENSOR_MAP_L2_PROMOTION_L2_{max(width, 64)}B"
    assert isinstance(swz, cu.CUtensorMapSwizzle) and isinstance(l2, cu.CUtensorMapL2promotion)


def test_no_enum_value_or_struct_layout_is_typed_in_the_module():
    """Enums are looked up by name in the binding: no table or constant maps a cuda.h name or our key to a number,
    and the module has no ctypes (its structs are the binding's)."""
    assert "ctypes" not in SOURCE
    assert not re.findall(r"^\s*CU_[A-Z_]+\s*=\s*\d", SOURCE, re.M)  # CU_LAUNCH_ATTRIBUTE_... = 4
    for table in re.findall(r"^([A-Z_]+) = (\{[^}]*\})", SOURCE, re.M | re.S):
        values = re.findall(r":\s*([^,}]+)", table[1])
        assert not any(re.fullmatch(r"\s*-?\d+\s*", v) for v in values) or table[0] == "ELEMENT_BYTES", table
    assert set(hh.DATA_TYPE) == set(hh.ELEMENT_BYTES)


def test_encode_reports_the_driver_error_by_name():
    with pytest.raises(hh.DriverError, match="cuTensorMapEncodeTiled .*CUDA_ERROR_INVALID_VALUE: invalid argument"):
        hh.encode_tiled(0x10000, hh.TiledMap("fp16", 256, 256, 64, 64), hh.Driver(FakeDriver(code=1)))


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
    cu = FakeDriver()
    with pytest.raises(InputError, match=match):
        hh.encode_tiled(0x10000, tmap, hh.Driver(cu))
    assert cu.calls == []


def test_misaligned_or_null_address_is_refused():
    with pytest.raises(InputError, match="16-byte aligned"):
        hh.encode_tiled(0x10008, hh.TiledMap("fp16", 64, 64, 64, 64), hh.Driver(FakeDriver()))
    with pytest.raises(InputError, match="device pointer"):
        hh.encode_tiled(0, hh.TiledMap("fp16", 64, 64, 64, 64), hh.Driver(FakeDriver()))


class FakeArray:
    class data:
        ptr = 0xDEAD0000


def test_pack_params_points_at_each_argument_by_value():
    tmap = np.frombuffer(bytes(range(128)), dtype=np.dtype((np.void, 128)))[0]
    params, keep = hh.pack_params([np.int32(-7), np.float32(1.5), FakeArray(), tmap, np.uint64(2**40)])
    pointers = (ctypes.c_void_p * 5).from_address(params)
    assert ctypes.c_int32.from_address(pointers[0]).value == -7
    assert ctypes.c_float.from_address(pointers[1]).value == 1.5
    assert ctypes.c_uint64.from_address(pointers[2]).value == 0xDEAD0000
    assert ctypes.string_at(pointers[3], 128) == bytes(range(128)) and pointers[3] % 64 == 0
    assert ctypes.c_uint64.from_address(pointers[4]).value == 2**40
    assert len(keep) == 6  # the pointer array and one buffer per argument stay alive with the launch


@pytest.mark.parametrize("bad", [3, 1.0, np.float64(1.0), "x"])
def test_pack_params_refuses_ambiguous_types(bad):
    with pytest.raises(InputError, match="argument 0"):
        hh.pack_params([bad])


def test_cluster_launch_sets_the_bindings_cluster_attribute():
    cu = FakeDriver()
    hh.prepare_launch(0x1234, (132, 1, 1), (384, 1, 1), [np.int32(42)], shared_mem=197632, stream=0x77,
                      cluster=(2, 1, 1), drv=hh.Driver(cu))()
    call = cu.calls[0]
    assert call["grid"] == (132, 1, 1) and call["func"] == ("CUfunction", 0x1234) and call["first"] == 42
    assert call["smem"] == 197632 and call["stream"] == ("CUstream", 0x77) and call["extra"] == 0
    (attr,) = call["attrs"]
    assert call["num_attrs"] == 1 and attr.id is cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z) == (2, 1, 1)


def test_a_prepared_launch_packs_once_and_calls_the_driver_alone(monkeypatch):
    cu, packed = FakeDriver(), []
    pack = hh.pack_params
    monkeypatch.setattr(hh, "pack_params", lambda args: packed.append(args) or pack(args))
    launch = hh.prepare_launch(0x1234, (132, 1, 1), (384, 1, 1), [np.int32(42)], shared_mem=197632,
                               cluster=(2, 1, 1), drv=hh.Driver(cu))
    assert cu.calls == [] and len(packed) == 1  # nothing launched while preparing
    for _ in range(3):
        launch()
    assert len(packed) == 1 and len(cu.calls) == 3  # three driver calls, the arguments packed once
    assert all(c["grid"] == (132, 1, 1) and c["first"] == 42 and c["num_attrs"] == 1 for c in cu.calls)


def test_plain_launch_has_no_attributes():
    cu = FakeDriver()
    hh.prepare_launch(0x1234, 10, 128, [np.int32(1)], drv=hh.Driver(cu))()
    assert cu.calls[0]["num_attrs"] == 0 and cu.calls[0]["attrs"] == [] and cu.calls[0]["grid"] == (10, 1, 1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid=(131, 1, 1), cluster=(2, 1, 1)), "must divide the grid"),
    (dict(grid=(160, 1, 1), cluster=(16, 1, 1)), "portable limit"),
    (dict(grid=(0, 1, 1)), "positive integers"),
    (dict(grid=(4, 1, 1), block=(1024, 2, 1)), "more than 1024 threads"),
])
def test_launch_checks_geometry_before_the_driver(kwargs, match):
    cu = FakeDriver()
    args = dict(block=(128, 1, 1)) | kwargs
    with pytest.raises(InputError, match=match):
        hh.prepare_launch(0x1234, args.pop("grid"), args.pop("block"), [np.int32(1)], drv=hh.Driver(cu), **args)
    assert cu.calls == []


def test_launch_error_names_the_call():
    with pytest.raises(hh.DriverError, match="cuLaunchKernelEx.*cluster \\(2, 1, 1\\).*CUDA_ERROR_INVALID_VALUE"):
        hh.prepare_launch(0x1234, 4, 128, [np.int32(1)], cluster=(2, 1, 1), drv=hh.Driver(FakeDriver(code=1)))()


def test_co_resident_clusters_asks_the_occupancy_calculator_with_the_launchs_configuration():
    cu = FakeDriver()
    assert hh.co_resident_clusters(0x1234, (128, 1, 1), (384, 1, 1), 231424, (4, 1, 1), hh.Driver(cu)) == 30
    call = cu.calls[0]
    assert call["func"] == ("CUfunction", 0x1234) and call["grid"] == (128, 1, 1) and call["block"] == (384, 1, 1)
    assert call["smem"] == 231424
    (attr,) = call["attrs"]
    assert attr.id is cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z) == (4, 1, 1)
    with pytest.raises(hh.DriverError, match="cuOccupancyMaxActiveClusters.*cluster \\(4, 1, 1\\).*INVALID_VALUE"):
        hh.co_resident_clusters(0x1234, 128, 384, 0, (4, 1, 1), hh.Driver(FakeDriver(code=1)))
    with pytest.raises(InputError, match="must divide the grid"):  # checked before the driver
        hh.co_resident_clusters(0x1234, 130, 384, 0, (4, 1, 1), hh.Driver(cu))


@pytest.mark.parametrize(("grid", "cluster", "fit", "note"), [
    ((128, 1, 1), (4, 1, 1), 30, "32 clusters of 4, 30 co-resident: 2 rounds of clusters"),
    ((128, 1, 1), (4, 1, 1), 32, ""),
    ((112, 1, 1), (8, 1, 1), 14, ""),  # cuBLAS's 2 x 4 clusters at 1000^3: 14 of them
    ((112, 1, 1), (8, 1, 1), 5, "14 clusters of 8, 5 co-resident: 3 rounds of clusters"),
    ((2, 64, 1), (1, 2, 1), 0, ""),  # unknown: no note
])
def test_rounds_note(grid, cluster, fit, note):
    assert hh.rounds_note(grid, cluster, fit) == note


def test_no_driver_library_is_a_clear_error():
    cu = FakeDriver(missing_lib=True)
    with pytest.raises(GpuUnavailableError, match="cuTensorMapEncodeTiled .*the CUDA driver could not be loaded"):
        hh.encode_tiled(0x10000, hh.TiledMap("fp16", 64, 64, 64, 64), hh.Driver(cu))
    with pytest.raises(GpuUnavailableError, match="cuLaunchKernelEx.*the CUDA driver could not be loaded"):
        hh.prepare_launch(0x1234, 4, 128, [np.int32(1)], drv=hh.Driver(cu))()


def test_a_missing_binding_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import cuda.bindings fails
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    with pytest.raises(GpuUnavailableError, match=r"cuda.bindings is not installed .*pip install cuda-bindings"):
        hh.Driver()


# -- the real binding, where installed: our arguments convert, up to the driver call itself ---------------------
def _real():
    return from_test_extra("cuda.bindings.driver")


def test_every_enum_name_we_use_is_in_the_real_binding():
    cu = _real()
    assert all(callable(getattr(cu, f)) for f in ("cuTensorMapEncodeTiled", "cuLaunchKernelEx",
                                                    "cuOccupancyMaxActiveClusters"))
    for enum_type, names in (("CUtensorMapDataType", hh.DATA_TYPE.values()), ("CUtensorMapSwizzle", hh.SWIZZLE.values()),
                             ("CUtensorMapL2promotion", hh.L2_PROMOTION.values())):
        for name in names:
            assert getattr(getattr(cu, enum_type), name).name == name
    assert cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 != cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16


def test_the_real_binding_takes_our_encode_arguments():
    """Without a driver the call stops at loading libcuda (GpuUnavailableError); with one, it encodes or the driver
    refuses. A TypeError here would be an argument the binding does not convert."""
    try:
        m = hh.encode_tiled(0x10000, hh.TiledMap("bf16", 4096, 4096, 128, 64), hh.Driver(_real()))
    except (GpuUnavailableError, hh.DriverError):
        return
    assert isinstance(m, np.void) and m.dtype.itemsize == 128


def test_the_real_binding_holds_our_launch_configuration():
    cu = _real()
    cfg = hh.launch_config((132, 1, 1), (384, 1, 1), 197632, 0, (2, 1, 1), hh.Driver(cu))
    assert (cfg.gridDimX, cfg.blockDimX, cfg.sharedMemBytes, cfg.numAttrs) == (132, 384, 197632, 1)
    attr = cfg.attrs[0]
    assert attr.id == cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z) == (2, 1, 1)
    plain = hh.launch_config(10, 128, 0, 0, None, hh.Driver(cu))
    assert (plain.gridDimX, plain.numAttrs, list(plain.attrs)) == (10, 0, [])


def test_without_a_driver_the_real_launch_call_stops_at_loading_it():
    """The launch's arguments (config, CUfunction, kernelParams as an address, extra) convert: the call gets as far as
    loading libcuda. Only where no driver is installed: a made-up function must never reach a real one."""
    import ctypes.util

    cu = _real()
    if ctypes.util.find_library("cuda"):
        pytest.skip("a CUDA driver is installed here: the GPU tests launch real kernels through this call")
    launch = hh.prepare_launch(0x1234, (132, 1, 1), (384, 1, 1), [np.int32(1)], cluster=(2, 1, 1), drv=hh.Driver(cu))
    with pytest.raises(GpuUnavailableError, match="cuLaunchKernelEx.*the CUDA driver could not be loaded"):
        launch()
