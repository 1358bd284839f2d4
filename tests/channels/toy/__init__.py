"""A channel that lives in the tests: registered with one line (``register(PLUGIN)``), it shows up in ``bot init``,
``bot doctor``, the settings and the command line, none of which names it.  Its entry holds typed references:
small functions that import inside (as ``channels.registry``'s do), checked by mypy against ``ToySettings``."""

from __future__ import annotations

from channels.base import ChannelFactory, ChannelPlugin, DoctorCheck
from channels.setup import ChannelSetup
from tests.channels.toy.settings import ToySettings


def _adapter() -> ChannelFactory[ToySettings]:
    from tests.channels.toy.adapter import build

    return build


def _doctor() -> DoctorCheck[ToySettings]:
    from tests.channels.toy.doctor import check

    return check


def _setup() -> ChannelSetup:
    from tests.channels.toy.setup import SETUP

    return SETUP


PLUGIN = ChannelPlugin("toy", ToySettings, _adapter, ("TOY_TOKEN",), text_limit=500, doctor=_doctor, setup=_setup)
