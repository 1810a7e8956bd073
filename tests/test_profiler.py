"""``ember.profiler`` and ``ember.autograd.profiler``: op names and counts, ranges, shapes, tables, traces,
schedules, per-thread recording."""
from __future__ import annotations

import gzip
import json
import threading
import time

import pytest

import ember
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _names(prof):
    return [e.name for e in prof.events()]


def test_ops_of_a_small_model_forward_and_backward(device):
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU(), ember.nn.Linear(3, 2)).to(device)
    x = ember.randn(5, 4, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        y = m(x).sum()
        y.backward()
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["aten::linear"] == 2
    assert counts["aten::relu"] == 1
    assert counts["aten::sum"] >= 1
    # the backward's ops are recorded too: the ReLU mask and the two layers' GEMMs
    assert counts.get("aten::relu_grad", 0) == 1
    assert counts.get("aten::matmul", 0) >= 3
    assert sum(counts.values()) == len(prof.events())


def test_each_op_is_timed_and_averages_add_up(device):
    a = ember.ones(8, 8, device=device)
    with profile() as prof:
        for _ in range(3):
            a = a * 2
    avg = {e.key: e for e in prof.key_averages()}
    mul = avg["aten::mul"]
    assert mul.count == 3
    evs = [e for e in prof.events() if e.name == "aten::mul"]
    assert all(e.cpu_time_total >= 0 for e in evs)
    assert mul.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in evs))
    assert mul.cpu_time == pytest.approx(mul.cpu_time_total / 3)


def test_record_function_ranges_nest_with_self_and_total_times(device):
    x = ember.ones(4, device=device)
    with profile() as prof:
        with record_function("outer"):
            time.sleep(0.002)
            with record_function("inner"):
                y = x.exp()
                time.sleep(0.002)
            y = y + 1
    evs = {e.name: e for e in prof.events()}
    outer, inner = evs["outer"], evs["inner"]
    assert inner.cpu_parent is outer and evs["aten::exp"].cpu_parent is inner
    assert evs["aten::add"].cpu_parent is outer
    assert [c.name for c in outer.cpu_children] == ["inner", "aten::add"]
    assert outer.cpu_time_total >= inner.cpu_time_total >= 2000
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - inner.cpu_time_total - evs["aten::add"].cpu_time_total)
    assert outer.self_cpu_time_total >= 2000
    assert inner.is_user_annotation and not evs["aten::exp"].is_user_annotation


def test_record_function_as_decorator_and_outside_a_profile(device):
    @record_function("my_fn")
    def f(t):
        return t * 3

    x = ember.ones(2, device=device)
    assert f(x).tolist() == [3.0, 3.0]  # no profiler: a plain call
    with profile() as prof:
        f(x)
    assert _names(prof) == ["my_fn", "aten::mul"]


def test_shapes_recorded_when_asked(device):
    a, b = ember.ones(2, 3, device=device), ember.ones(3, 4, device=device)
    with profile(record_shapes=True) as prof:
        a @ b
    (mm,) = [e for e in prof.events() if e.name == "aten::matmul"]
    assert mm.input_shapes == [[2, 3], [3, 4]]
    with profile() as prof2:
        a @ b
    assert all(e.input_shapes is None for e in prof2.events())
    grouped = prof.key_averages(group_by_input_shape=True)
    assert [e.input_shapes for e in grouped if e.key == "aten::matmul"] == [[[2, 3], [3, 4]]]


def test_table_columns_as_pytorch(device, torch):
    a = ember.ones(2, 3, device=device)
    with profile(record_shapes=True) as prof:
        with record_function("block"):
            (a * 2).sum()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as tprof:
        with torch.profiler.record_function("block"):
            (torch.ones(2, 3) * 2).sum()

    def header(table):
        lines = table.splitlines()
        return lines[0].split(), [c.strip() for c in lines[1].split("  ") if c.strip()], lines[-1].split(":")[0]

    for kw in ({"sort_by": "cpu_time_total", "row_limit": 5}, {"sort_by": "self_cpu_time_total"}):
        got = header(prof.key_averages().table(**kw))
        want = header(tprof.key_averages().table(**kw))
        assert got[1] == want[1] == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                                     "# of Calls"]
        assert len(got[0]) == len(want[0]) and got[2] == want[2] == "Self CPU time total"
    got = header(prof.key_averages(group_by_input_shape=True).table())
    want = header(tprof.key_averages(group_by_input_shape=True).table())
    assert got[1] == want[1] and got[1][-1] == "Input Shapes"
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=2)
    assert len(table.splitlines()) == 3 + 2 + 2  # header block, two rows, rule and total
    rows = prof.key_averages().table(sort_by="cpu_time_total").splitlines()[3:-2]
    assert rows[0].split()[0] == "block"  # the range holds every op: the largest total


def test_chrome_trace_is_valid_json_with_the_events(device, tmp_path):
    a = ember.ones(3, device=device)
    with profile(record_shapes=True) as prof:
        with record_function("step"):
            a.exp().sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    evs = trace["traceEvents"]
    assert [e["name"] for e in evs] == _names(prof)
    assert {e["ph"] for e in evs} == {"X"}
    step = next(e for e in evs if e["name"] == "step")
    exp = next(e for e in evs if e["name"] == "aten::exp")
    assert step["cat"] == "user_annotation" and exp["cat"] == "cpu_op"
    assert step["ts"] <= exp["ts"] and exp["ts"] + exp["dur"] <= step["ts"] + step["dur"] + 1e-3
    assert exp["args"]["Input Dims"] == [[3]]
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    assert json.loads(gzip.open(gz, "rt").read())["traceEvents"] == evs
    old = tmp_path / "old.json"
    prof.events().export_chrome_trace(str(old))
    assert len(json.loads(old.read_text())["traceEvents"]) == len(evs)


def test_schedule_actions_match_pytorch(torch):
    for kw in (dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=2),
               dict(wait=2, warmup=1, active=1, repeat=1, skip_first=3), dict(wait=0, warmup=1, active=3)):
        mine, theirs = schedule(**kw), torch.profiler.schedule(**kw)
        assert [mine(i).name for i in range(16)] == [theirs(i).name for i in range(16)], kw
    assert ProfilerAction.RECORD_AND_SAVE.value == torch.profiler.ProfilerAction.RECORD_AND_SAVE.value


def _scheduled_run(device, steps, **kw):
    traces = []

    def ready(p):
        traces.append(sorted({e.name for e in p.events() if e.name.startswith("ProfilerStep")}))

    x = ember.ones(2, device=device)
    with profile(schedule=schedule(**kw), on_trace_ready=ready) as p:
        for _ in range(steps):
            x = x * 2
            p.step()
    return traces


# the traces PyTorch 2.13 hands on for these schedules (counted with torch.profiler in a separate process: its
# profiler and a second one in the same process do not mix), with ember's step ranges in each
@pytest.mark.parametrize("kw,steps,want", [
    (dict(wait=1, warmup=1, active=2, repeat=2), 10, [["ProfilerStep#2", "ProfilerStep#3"],
                                                      ["ProfilerStep#6", "ProfilerStep#7"]]),
    (dict(wait=0, warmup=1, active=1), 5, [["ProfilerStep#1"], ["ProfilerStep#3"], ["ProfilerStep#5"]]),
    (dict(wait=1, warmup=1, active=2), 3, [["ProfilerStep#2", "ProfilerStep#3"]]),
    (dict(wait=1, warmup=1, active=2), 9, [["ProfilerStep#2", "ProfilerStep#3"],
                                           ["ProfilerStep#6", "ProfilerStep#7"]]),
])
def test_scheduled_profile_hands_traces_on_as_pytorch(device, kw, steps, want):
    assert _scheduled_run(device, steps, **kw) == want


def test_tensorboard_trace_handler_writes_chrome_traces(device, tmp_path):
    x = ember.ones(2, device=device)
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2), on_trace_ready=handler) as p:
        for _ in range(5):
            x = x + 1
            p.step()
    files = sorted((tmp_path / "tb").iterdir())
    assert len(files) == 2 and all(f.name.startswith("w0.") and f.name.endswith(".pt.trace.json") for f in files)
    for f in files:
        names = [e["name"] for e in json.loads(f.read_text())["traceEvents"]]
        assert "aten::add" in names and any(n.startswith("ProfilerStep#") for n in names)


def test_recording_is_per_thread(device):
    a = ember.ones(4, device=device)
    started, done = threading.Event(), threading.Event()

    def other():
        started.wait(5)
        for _ in range(20):
            a.sin()
        done.set()

    th = threading.Thread(target=other)
    th.start()
    with profile() as prof:
        started.set()
        a.cos()
        done.wait(5)
    th.join(5)
    names = _names(prof)
    assert names == ["aten::cos"]
    assert {e.thread for e in prof.events()} == {threading.get_native_id()}


def test_profilers_in_two_threads_each_see_their_own(device):
    a = ember.ones(4, device=device)
    barrier = threading.Barrier(2)
    got = {}

    def work(name, op):
        with profile() as p:
            barrier.wait(5)
            for _ in range(30):
                op(a)
        got[name] = {e.name for e in p.events()}

    ts = [threading.Thread(target=work, args=("s", ember.sin)), threading.Thread(target=work, args=("c", ember.cos))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(5)
    assert got == {"s": {"aten::sin"}, "c": {"aten::cos"}}


def test_profiler_and_autocast_together(device):
    kind = ember.device(device).type  # autocast casts only the tensors of its own device type
    low = ember.bfloat16 if kind == "cpu" else ember.float16
    if not ember.testing.has_dtype(device, low):
        pytest.skip(f"the {device} backend has no {low}")
    a = ember.ones(2, 3, device=device)
    b = ember.ones(3, 2, device=device)
    with profile() as prof, ember.autocast(kind, dtype=low):
        a @ b
    names = _names(prof)
    assert names.count("aten::to") == 2 and names[-1] == "aten::matmul"
    from ember import dispatch

    assert not dispatch.HANDLERS


def test_autograd_profiler(device):
    x = ember.ones(3, device=device, requires_grad=True)
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("fwd"):
            y = (x * 2).sum()
        y.backward()
    names = [e.name for e in prof.function_events]
    assert names[:3] == ["fwd", "aten::mul", "aten::sum"]
    assert "Self CPU time total" in prof.table()
    assert {e.key for e in prof.key_averages()} >= {"fwd", "aten::mul", "aten::sum"}
    with ember.autograd.profiler.profile(enabled=False) as off:
        x * 2
    assert off.function_events is None
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        off.table()


def test_profile_errors_and_api(torch):
    p = profile()
    with pytest.raises(AssertionError, match="Profiler must be initialized before getting events"):
        p.events()
    with pytest.warns(FutureWarning, match="`use_cuda` is deprecated"):
        profile(use_cuda=False)
    assert ProfilerActivity.CPU in ember.profiler.supported_activities()
    assert ProfilerActivity.CPU.name == torch.profiler.ProfilerActivity.CPU.name == "CPU"
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=1, warmup=0, active=1)
    with pytest.raises(AssertionError):
        schedule(wait=1, warmup=1, active=0)


def test_device_time_through_the_backend_event_api():
    from fakegpu import registered

    with registered(1) as backend:
        if backend.host:
            pytest.skip("the test backend says it is the host")
        a = ember.ones(16, 16, device="fakegpu:0")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            (a @ a).sum()
        mm = next(e for e in prof.events() if e.name == "aten::matmul")
        assert mm.device_time_total > 0 and mm.use_device == "cuda"
        table = prof.key_averages().table(sort_by="self_cuda_time_total")
        assert "Self CUDA %" in table.splitlines()[1] and "Self CUDA time total" in table
        with profile(activities=[ProfilerActivity.CPU]) as cpu_only:
            a @ a
        assert all(e.device_time_total == 0 for e in cpu_only.events())
