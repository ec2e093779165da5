"""Drive the console's page in a real browser: Debian's ``chromium`` headless through selenium and
Debian's ``chromium-driver`` (tools/bootstrap.sh installs both). No rclpy.

Used by the browser test (what an operator sees and clicks), by ``make demo`` (``out/console.png``)
and by the per-profile checks. The page's elements are found by their labels
(:mod:`hand_console.page`'s constants), as a user finds them:

- :meth:`ConsoleBrowser.image_sources` / :meth:`ConsoleBrowser.bars`: the images (camera, plot,
  robot panels: their blob addresses change with each new picture) and the progress bars (the five
  flexion bars first, values in %);
- :meth:`ConsoleBrowser.click`: a button by its text; :meth:`ConsoleBrowser.type_into`: the number
  field beside a slider, by the slider's label;
- :meth:`ConsoleBrowser.text`: the page's visible text (gate line, figures, calibration, refusals).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from typing import Any

#: Where Debian puts them (apt-get install chromium chromium-driver).
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def browser_problem() -> str | None:
    """Why no browser can be driven here (missing chromium, chromedriver or selenium), or None."""
    for path, what in ((os.environ.get("HAND_CHROMIUM", CHROMIUM), "chromium"),
                       (os.environ.get("HAND_CHROMEDRIVER", CHROMEDRIVER), "chromium-driver")):
        if not (os.access(path, os.X_OK) or shutil.which(path)):
            return f"no {what} at {path} (tools/bootstrap.sh installs it with apt-get)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (tools/requirements.txt)"
    return None


#: Niceness of the browser's processes: on a machine shared with the pipeline, the browser (three.js
#: in software WebGL) must not take CPU from the tracker's hot path.
BROWSER_NICE = 10


def _niced(binary: str, nice: int) -> str:
    """An executable that runs ``binary`` with niceness ``nice`` (a tiny wrapper script in a
    temporary directory; its children, chromium's renderers, inherit the niceness)."""
    import tempfile

    wrapper = os.path.join(tempfile.mkdtemp(prefix="hand_console_browser_"), "chromium")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec nice -n {int(nice)} "{binary}" "$@"\n')
    os.chmod(wrapper, 0o755)
    return wrapper


#: JavaScript run before any page script (``Page.addScriptToEvaluateOnNewDocument``): the page's
#: ``requestAnimationFrame`` callbacks run on a timer at most once per %(period).3f ms, all those
#: asked within a period together at its end, as a display at that refresh rate would call them.
#: Chromium has no command-line switch capping a headless page's frame rate; three.js (viser's 3D
#: scene) draws from requestAnimationFrame, so this caps how often the browser renders it.
_FRAME_CAP_JS = """
(() => {
  const period = %(period).6f;
  const timers = new Map();
  let next = 1, shown = -Infinity;  // the last period boundary whose frame ran (a timer may fire early)
  window.requestAnimationFrame = (cb) => {
    const now = performance.now();
    const id = next++;
    const due = Math.max(Math.ceil(now / period) * period, shown + period);
    timers.set(id, setTimeout(() => { timers.delete(id); shown = Math.max(shown, due); cb(performance.now()); },
                              Math.max(due - now, 0)));
    return id;
  };
  window.cancelAnimationFrame = (id) => { clearTimeout(timers.get(id)); timers.delete(id); };
})();
"""


def chromium(width: int = 1400, height: int = 1000, nice: int = BROWSER_NICE, max_fps: float | None = None):
    """A headless Chromium WebDriver (software WebGL: there is no GPU), its processes at niceness
    ``nice``; ``max_fps``: the pages' animation frames capped at this rate (:data:`_FRAME_CAP_JS`;
    None: chromium's own rate). RuntimeError with the reason when it cannot start; ValueError for a
    non-positive ``max_fps``."""
    if max_fps is not None and not max_fps > 0:
        raise ValueError(f"max_fps must be > 0, got {max_fps}")
    problem = browser_problem()
    if problem:
        raise RuntimeError(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    # commands do not wait for the page to be "loaded": a live page that keeps replacing its
    # pictures would hold every command (measured: execute_script waited > 120 s)
    opts.page_load_strategy = "none"
    binary = os.environ.get("HAND_CHROMIUM", CHROMIUM)
    opts.binary_location = _niced(binary, nice) if nice and shutil.which("nice") else binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--enable-unsafe-swiftshader", f"--window-size={int(width)},{int(height)}",
                "--disable-background-networking", "--disable-extensions", "--mute-audio"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(os.environ.get("HAND_CHROMEDRIVER", CHROMEDRIVER)), options=opts)
    driver.set_script_timeout(120)  # a page starved of CPU on a loaded machine answers late, not never
    driver.set_page_load_timeout(300)
    if max_fps is not None:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                               {"source": _FRAME_CAP_JS % {"period": 1000.0 / max_fps}})
    return driver


def process_tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and all its descendants now alive, with the
    children each of them has reaped (/proc; 0.0 for what is gone): a browser's CPU time is its
    driver's process tree, not every chromium on the machine."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(times.get(p, 0.0) for p in tree)


class HeadlessClient:
    """A client of the console's page that draws nothing: it opens the page's websocket as the
    browser's viser client does (subprotocol ``viser-v<version>``) and receives every message
    (``messages``, ``bytes`` counted), so the server does all its per-client work for it (renders,
    pictures encoded, messages sent) without a browser rendering on the same cores. The benchmark
    measures the server's cost with it, and the tests use it as "a browser is connected".
    ``url``: the page's ``http://host:port``. Use as a context manager or call :meth:`close`."""

    def __init__(self, url: str, open_timeout: float = 30.0):
        import threading

        import viser
        from websockets.sync.client import connect

        self.url = url
        self.messages = self.bytes = 0
        self._ws = connect("ws://" + url.split("://", 1)[-1], subprotocols=[f"viser-v{viser.__version__}"],
                           max_size=None, open_timeout=open_timeout)
        # viser counts a client as connected once it reports its camera, as the browser's page does
        import msgspec
        from viser._messages import ViewerCameraMessage

        camera = ViewerCameraMessage(wxyz=(1.0, 0.0, 0.0, 0.0), position=(0.0, 0.0, 1.0), fov=1.0, near=0.01,
                                     far=100.0, image_height=760, image_width=1000, look_at=(0.0, 0.0, 0.0),
                                     up_direction=(0.0, 0.0, 1.0))
        self._ws.send(msgspec.msgpack.encode(camera.as_serializable_dict()))
        self._thread = threading.Thread(target=self._read, name="console headless client", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for msg in self._ws:
                self.messages += 1
                self.bytes += len(msg)
        except Exception:  # noqa: BLE001 - the server closed the connection: reading ends
            pass

    def __enter__(self) -> HeadlessClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._ws.close()
        self._thread.join(5.0)


#: JavaScript returning the page's state in one round trip: images, progress bars, visible text.
_STATE_JS = """
const imgs = Array.from(document.querySelectorAll('img')).filter(i => i.src.startsWith('blob:'))
  .map(i => [i.src, i.naturalWidth, i.naturalHeight]);
const bars = Array.from(document.querySelectorAll('[role=progressbar]'))
  .map(b => parseFloat(b.getAttribute('aria-valuenow')));
return [imgs, bars];
"""


class ConsoleBrowser:
    """One browser tab on the console at ``url`` (``http://127.0.0.1:8080``)."""

    def __init__(self, url: str, width: int = 1400, height: int = 1000, driver: Any = None,
                 nice: int = BROWSER_NICE, max_fps: float | None = None):
        self.url = url
        self.driver = driver if driver is not None else chromium(width, height, nice, max_fps)

    def cpu_seconds(self) -> float:
        """CPU seconds of this browser so far: chromedriver and every chromium process it started."""
        return process_tree_cpu_seconds(self.driver.service.process.pid)

    def __enter__(self) -> ConsoleBrowser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.driver.quit()
        except Exception:  # noqa: BLE001 - a dead browser is closed already
            pass

    def open(self, timeout: float = 60.0) -> None:
        """Load the page and wait until viser's client has built the panel (a button or the camera)."""
        self.driver.get(self.url)
        self.wait_for(lambda: "camera" in self.text(), timeout, "the console's panel")

    def wait_for(self, cond: Callable[[], Any], timeout: float, what: str, period: float = 0.2) -> Any:
        """Poll ``cond`` until it returns a true value (returned); TimeoutError naming ``what``."""
        end = time.monotonic() + timeout
        while True:
            v = cond()
            if v:
                return v
            if time.monotonic() > end:
                raise TimeoutError(f"page: no {what} within {timeout:.0f} s; page text:\n{self.text()[:1500]}")
            time.sleep(period)

    def state(self) -> tuple[list[tuple[str, int, int]], list[float]]:
        """(images as (blob address, width, height) in page order, progress bars in %)."""
        imgs, bars = self.driver.execute_script(_STATE_JS)
        return [tuple(i) for i in imgs], [float(b) for b in bars]

    def image_sources(self) -> list[str]:
        return [i[0] for i in self.state()[0]]

    def bars(self) -> list[float]:
        return self.state()[1]

    def text(self) -> str:
        from selenium.webdriver.common.by import By

        try:
            return self.driver.find_element(By.TAG_NAME, "body").text
        except Exception:  # noqa: BLE001 - a page being rebuilt has no body for a moment
            return ""

    def click(self, label: str) -> None:
        """Click the button whose text is ``label``."""
        from selenium.webdriver.common.by import By

        button = self.driver.find_element(By.XPATH, f"//button[.//span[normalize-space()='{label}']]")
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        button.click()

    def type_into(self, slider_label: str, value: str) -> None:
        """Type ``value`` into the number field beside the slider labelled ``slider_label`` and
        press Enter (each keystroke reaches the server as the operator types, as in a browser)."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        label = self.driver.find_element(By.XPATH, f"//label[normalize-space()='{slider_label}']")
        slider = self.driver.find_element(By.ID, label.get_attribute("for"))
        field = slider.find_element(By.XPATH, "./following-sibling::div//input")
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", field)
        field.click()
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(value)
        field.send_keys(Keys.ENTER)

    def field_value(self, slider_label: str) -> str:
        from selenium.webdriver.common.by import By

        label = self.driver.find_element(By.XPATH, f"//label[normalize-space()='{slider_label}']")
        slider = self.driver.find_element(By.ID, label.get_attribute("for"))
        return slider.find_element(By.XPATH, "./following-sibling::div//input").get_attribute("value")

    def screenshot(self, path: str | os.PathLike) -> str:
        """Save a PNG of the window; returns the path."""
        path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if not self.driver.save_screenshot(path):
            raise RuntimeError(f"screenshot {path} failed")
        return path


def main(argv: list[str] | None = None) -> int:
    """``python -m hand_console.browser http://127.0.0.1:8080``: a :class:`HeadlessClient` on the
    page (in its own process, as a browser would be) until SIGTERM or Ctrl-C; then one JSON line
    ``{"messages": n, "bytes": n}``."""
    import argparse
    import json
    import signal
    import threading

    ap = argparse.ArgumentParser(prog="hand_console.browser", description=main.__doc__.split("\n")[0])
    ap.add_argument("url", help="the console's page, http://127.0.0.1:PORT")
    args = ap.parse_args(argv)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    client = HeadlessClient(args.url)
    print("connected", flush=True)
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    client.close()
    print(json.dumps({"messages": client.messages, "bytes": client.bytes}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
