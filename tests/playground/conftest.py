import pytest

# a few dozen evenly spaced Moore responses: the full 1,880 take minutes to score, and the code path is the same
MOORE_SAMPLE = 24


@pytest.fixture(scope="session")
def moore_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("moore-cache")


@pytest.fixture(scope="session")
def playground_app(scorer, moore_cache):
    from guard.playground import create_app

    return create_app("mental-health", scorer=scorer, moore_limit=MOORE_SAMPLE, cache_dir=moore_cache)


@pytest.fixture(scope="session")
def client(playground_app):
    from starlette.testclient import TestClient

    return TestClient(playground_app)


@pytest.fixture(scope="session")
def page_client(tmp_path_factory):
    """For what needs no classifier (the page, its assets, the vignettes): the scorer loads on first use only."""
    from starlette.testclient import TestClient

    from guard.playground import create_app

    return TestClient(create_app("mental-health", cache_dir=tmp_path_factory.mktemp("unused-cache")))


@pytest.fixture(scope="session")
def moore_ready(playground_app):
    moore = playground_app.state.playground.moore
    moore.start()
    assert moore.wait(timeout=120), moore.status()
    return moore
