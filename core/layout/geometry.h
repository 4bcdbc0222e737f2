#pragma once
// Plain geometry value types for the layout (no Qt in core).
//   Rect r{10, 20, 80, 30};  r.center().x == 50;  r.intersects(other);
//   Point p{r.center().x, r.bottom()};

namespace remat::core::layout {

struct Point
{
    double x = 0;
    double y = 0;
    bool operator==(const Point &) const = default;
};

struct Size
{
    double width = 0;
    double height = 0;
    bool operator==(const Size &) const = default;
};

struct Rect
{
    double x = 0;
    double y = 0;
    double width = 0;
    double height = 0;

    double right() const { return x + width; }
    double bottom() const { return y + height; }
    Point center() const { return {x + width / 2, y + height / 2}; }
    /// True when the interiors overlap (touching edges do not count).
    bool intersects(const Rect &o) const
    {
        return x < o.right() && o.x < right() && y < o.bottom() && o.y < bottom();
    }
    bool contains(const Rect &o) const
    {
        return o.x >= x && o.y >= y && o.right() <= right() && o.bottom() <= bottom();
    }
    Rect translated(double dx, double dy) const { return {x + dx, y + dy, width, height}; }
    bool operator==(const Rect &) const = default;
};

} // namespace remat::core::layout
