"""The dashboard in headless Chromium (Debian's /usr/bin/chromium and
/usr/bin/chromedriver), driven by Selenium: run by .ci/dashboard against a
seeded server. Clicks through log-in -> dataset -> job -> model ->
deployment -> experiments, follows a live job, and checks that a stranger's
key gets a 404; asserts real content on every page and that the browser
reported no error (a CSP violation, a failed script); saves a full-page
screenshot of each step."""

import argparse
import base64
import json
import os
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

# The first data row of data/mushroom/mushroom.csv: no page may contain it.
FIRST_ROW = "p,x,s,n,t,p,f,c,n,k,e,e,s,s,w,w,p,w,o,p,k,s,u"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    for name in ["base", "owner", "analyst", "stranger", "dataset", "job", "model",
                 "ebm-model", "deployment", "screenshots"]:
        p.add_argument("--" + name, required=True)
    return p.parse_args()


def browser(profile):
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900",
                 "--user-data-dir=" + profile]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=opts)


class Walk:
    def __init__(self, args, driver):
        self.args = args
        self.d = driver
        self.wait = WebDriverWait(driver, 60)
        self.step = 0

    def url(self, path):
        return self.args.base + path

    def shot(self, name):
        """A full-page screenshot (Chromium's DevTools capture beyond the viewport)."""
        self.step += 1
        size = self.d.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        png = self.d.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"],
                     "height": min(size["height"], 12000), "scale": 1}})["data"]
        path = os.path.join(self.args.screenshots, f"{self.step:02d}-{name}.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(png))
        print(f"   screenshot {path} ({int(size['width'])} x {int(size['height'])} px)")

    def click_href(self, path):
        """Click the first link to `path` (table cells show ids shortened)."""
        self.d.find_element(By.CSS_SELECTOR, f"a[href='{path}']").click()

    def check_page(self):
        """No row in the page, and no error in the browser's console."""
        html = self.d.page_source
        assert FIRST_ROW not in html, "a page shows a raw row"
        errors = [e for e in self.d.get_log("browser")
                  if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
        assert not errors, f"browser errors on {self.d.current_url}: {errors}"

    def text(self, css):
        return self.d.find_element(By.CSS_SELECTOR, css).text

    def log_in(self, key):
        self.d.get(self.url("/dashboard"))
        self.wait.until(EC.url_contains("/dashboard/login"))
        field = self.d.find_element(By.ID, "key")
        field.clear()
        field.send_keys(key)
        self.d.find_element(By.ID, "login").click()

    def log_out(self):
        self.d.find_element(By.ID, "logout").click()
        self.wait.until(EC.url_contains("/dashboard/login"))


def api(args, method, path, key, body=None):
    req = urllib.request.Request(args.base + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + key,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="pb-chromium-") as profile:
        d = browser(profile)
        try:
            run(Walk(args, d))
        finally:
            d.quit()
    print("-- browser test passed")


def run(w):
    a = w.args
    print("-- the server's root sends a browser to the log-in page")
    w.d.get(w.url("/"))
    w.wait.until(EC.url_contains("/dashboard/login"))
    assert w.d.find_elements(By.ID, "key"), "no log-in form at " + w.d.current_url

    print("-- log-in: a wrong key gets a message")
    w.log_in("pb_not_a_key")
    msg = w.wait.until(EC.visibility_of_element_located((By.ID, "login-error"))).text
    assert "not valid" in msg, msg
    w.shot("login-wrong-key")
    w.d.get_log("browser")  # the 401 of the wrong key was expected; start afresh

    print("-- log-in as the analyst: the overview")
    w.log_in(a.analyst)
    w.wait.until(EC.presence_of_element_located((By.ID, "datasets")))
    assert "bob" in w.text("header .who")
    for table in ["datasets", "jobs", "models", "deployments"]:
        rows = w.d.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")
        assert rows, f"the overview's {table} table is empty"
    assert w.d.find_elements(By.CSS_SELECTOR, f"#jobs a[href='/dashboard/jobs/{a.job}']")
    w.check_page()
    w.shot("overview")

    print("-- dataset: budget, burn-down, ledger, schema")
    w.d.find_element(By.LINK_TEXT, "mushroom").click()
    w.wait.until(EC.presence_of_element_located((By.ID, "budget")))
    assert w.text("#dataset-name") == "mushroom"
    assert w.text("#n-rows") == "8124", w.text("#n-rows")
    assert float(w.text("#spent")) == 2.0, w.text("#spent")
    assert float(w.text("#remaining")) == 2.0, w.text("#remaining")
    assert w.d.find_elements(By.CSS_SELECTOR, "#budget svg path"), "no burn-down"
    # The last charge is drawn as a visible step, not a zero-width one at
    # the right edge: its horizontal run in screen pixels.
    charged = w.d.find_element(By.CSS_SELECTOR, "#budget svg path.charged")
    runs = [float(t[1:]) for t in charged.get_attribute("d").split() if t.startswith("H")]
    svg = w.d.find_element(By.CSS_SELECTOR, "#budget svg")
    scale = svg.rect["width"] / float(svg.get_dom_attribute("viewBox").split()[2])
    last_width = (runs[-1] - runs[-2]) * scale
    assert last_width >= 20, f"the last charge is drawn {last_width:.1f} px wide"
    print(f"   the last charge's step is {last_width:.0f} px wide")
    assert float(w.text("#spent-delta")) >= 0, w.text("#spent-delta")
    kinds = [r.find_elements(By.TAG_NAME, "td")[1].text
             for r in w.d.find_elements(By.CSS_SELECTOR, "#ledger tbody tr")]
    assert kinds == ["total", "charge", "charge"], kinds
    assert len(w.d.find_elements(By.CSS_SELECTOR, "#schema tbody tr")) == 22
    w.check_page()
    w.shot("dataset")

    print("-- job: state, progress, charge, model")
    w.click_href(f"/dashboard/jobs/{a.job}")
    w.wait.until(EC.presence_of_element_located((By.ID, "job-state")))
    assert w.text("#job-state") == "succeeded", w.text("#job-state")
    assert "15 / 15 rounds" in w.text("#live")
    w.check_page()
    w.shot("job")

    print("-- model (LazyBB): privacy statement, vote table, shapes")
    w.click_href(f"/dashboard/models/{a.model}")
    w.wait.until(EC.presence_of_element_located((By.ID, "vote-table")))
    assert w.text("#algorithm") == "lazybb"
    assert "epsilon" in w.text("#privacy")
    assert w.d.find_elements(By.CSS_SELECTOR, "#vote-table tbody tr"), "empty vote table"
    assert len(w.d.find_elements(By.CSS_SELECTOR, "#inspection svg")) >= 2
    w.check_page()
    w.shot("model-lazybb")

    print("-- deployment: two versions")
    w.d.get(w.url("/dashboard"))
    w.d.find_element(By.LINK_TEXT, a.deployment).click()
    w.wait.until(EC.presence_of_element_located((By.ID, "versions")))
    assert w.text("#deployment-version") == "2"
    versions = w.d.find_elements(By.CSS_SELECTOR, "#versions tbody tr")
    assert len(versions) == 2, len(versions)
    assert versions[0].find_elements(By.CSS_SELECTOR, f"a[href='/dashboard/models/{a.model}']")
    assert versions[1].find_elements(By.CSS_SELECTOR, f"a[href='/dashboard/models/{a.ebm_model}']")
    w.check_page()
    w.shot("deployment")

    print("-- model (DP-EBM): shape-function plots")
    w.click_href(f"/dashboard/models/{a.ebm_model}")
    w.wait.until(EC.presence_of_element_located((By.ID, "inspection")))
    assert w.text("#algorithm") == "dp-ebm"
    shapes = w.d.find_elements(By.CSS_SELECTOR, "#inspection figure.shape svg")
    assert len(shapes) == 22, len(shapes)
    w.check_page()
    w.shot("model-dp-ebm")

    print("-- privacy-accuracy curves")
    w.d.find_element(By.LINK_TEXT, "Privacy–accuracy").click()
    w.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "section.experiment svg")))
    charts = w.d.find_elements(By.CSS_SELECTOR, "section.experiment svg")
    assert len(charts) == 2, len(charts)
    assert all(len(c.find_elements(By.TAG_NAME, "circle")) >= 10 for c in charts)
    w.check_page()
    w.shot("experiments")

    print("-- a live job: the page follows it (EventSource) to the end")
    job = api(a, "POST", "/v1/jobs", a.analyst,
              {"dataset_id": a.dataset, "epsilon": 0.5, "rounds": 2000,
               "weak_learner": "dp-top-down"})
    w.d.get(w.url(f"/dashboard/jobs/{job['id']}"))
    first = w.text("#job-state")
    live = w.d.find_element(By.ID, "live").get_attribute("data-events")
    if first in ("queued", "running"):
        assert live, "a running job's page has no event source"
        w.shot("job-live")
    WebDriverWait(w.d, 300).until(
        lambda d: d.find_element(By.ID, "job-state").text == "succeeded")
    assert "2000 / 2000 rounds" in w.text("#live")
    print(f"   first seen {first}; ended succeeded"
          + (" without a manual reload (server-sent events)" if first != "succeeded" else ""))
    w.check_page()
    w.shot("job-live-done")

    print("-- log-out, then a stranger's key: 404 for the dataset")
    w.log_out()
    w.log_in(a.stranger)
    w.wait.until(EC.presence_of_element_located((By.ID, "logout")))
    assert not w.d.find_elements(By.ID, "datasets"), "a stranger sees datasets"
    assert "No dataset is visible" in w.d.find_element(By.TAG_NAME, "main").text
    w.d.get(w.url(f"/dashboard/datasets/{a.dataset}"))
    assert w.text("h1") == "Not found", w.text("h1")
    assert a.dataset not in w.d.find_element(By.TAG_NAME, "main").text
    w.shot("stranger-404")
    w.log_out()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"dashboard browser test failed: {e}", file=sys.stderr)
        raise
