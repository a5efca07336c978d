"""The channel service is what the window's ChannelFacade is (checked by mypy: the assignment below must
type-check), and the fake the UI tests use follows the same protocol."""

from __future__ import annotations

from core.channels.facade import ChannelFacade
from core.channels.service import ChannelService
from tests.fakes.fake_channels import FakeChannels


def as_facade(service: ChannelService) -> ChannelFacade:
    facade: ChannelFacade = service
    return facade


def test_the_fake_is_a_channel_facade() -> None:
    facade: ChannelFacade = FakeChannels()
    assert callable(facade.enter_verify_code)
    assert as_facade.__name__ == "as_facade"
