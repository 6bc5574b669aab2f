"""The theme's "Back to top" button (pydata-sphinx-theme's #pst-back-to-top) appears at the bottom centre of the
screen while the reader scrolls up. On a phone it covered the middle of a figure's controls (chapter 6's
step-through, review r82), so the book's CSS (_static/tinytf-book.css) makes it a small arrow in the bottom-right
corner below 600 px (on a laptop it stays where the theme puts it). Its words stay its accessible name, and it still
works from the keyboard."""
from __future__ import annotations

from conftest import open_page

PAGE = "chapters/06_decoder_block.html"


def scrolled_up_button(page):
    page.evaluate("window.scrollTo(0, 6000)")
    page.wait_for_timeout(600)
    page.evaluate("window.scrollBy(0, -600)")  # the theme shows the button while the reader scrolls up
    page.wait_for_timeout(600)
    button = page.locator("#pst-back-to-top")
    assert button.is_visible()
    return button


def test_back_to_top_leaves_the_middle_of_a_phone_screen(book_server, browser):
    width = 375
    page, errors, _ = open_page(browser, PAGE, viewport=(width, 740))
    try:
        button = scrolled_up_button(page)
        box = button.bounding_box()
        assert box["x"] >= width * 0.8 and box["x"] + box["width"] <= width  # in the right-hand corner
        assert box["width"] <= 48 and box["height"] <= 40  # an arrow, not a pill with words
        assert box["y"] + box["height"] <= 740 and box["y"] >= 740 - 60  # at the bottom edge
        assert "Back to top" in button.inner_text() or "Back to top" in (button.text_content() or "")
        button.focus()
        page.keyboard.press("Enter")
        page.wait_for_timeout(800)
        assert page.evaluate("window.scrollY") < 50
        assert not errors
    finally:
        page.context.close()
