using Contend.Harness.Workloads;

namespace Contend.Tests;

/// <summary>SmartMart's orders: the knobs shape them as the paper's experiments need.</summary>
public class SmartMartTests
{
    const int Sections = 8, Items = 100;

    static int[] ItemsPerSection(SmartMart mart, int orders)
    {
        var client = mart.CreateClient(0, seed: 7);
        var counts = new int[Sections];
        for (int o = 0; o < orders; o++)
        {
            var args = client.NextOrder();
            Assert.Equal(mart.OrderItems, args[1]);
            var items = args.Skip(2).ToArray();
            Assert.Equal(items.Length, items.Distinct().Count());
            foreach (long gid in items) counts[gid / Items]++;
        }
        return counts;
    }

    [Fact]
    public void WithoutSectionSkewAnOrderTakesAnEqualShareOfItsSections()
    {
        var mart = new SmartMart(Sections, Items, orderItems: 32, orderSections: 8, window: 10, delayMicros: 0, itemTheta: 0, carts: 1);
        Assert.All(ItemsPerSection(mart, 100), n => Assert.Equal(400, n));
    }

    /// <summary>Seed 004, Section 4.5: the Zipf exponent moves the items towards the first section;
    /// at 5 nearly all of them are there.</summary>
    [Fact]
    public void SectionSkewConcentratesTheItemsInTheFirstSections()
    {
        SmartMart Mart(double theta) => new(Sections, Items, 32, 8, 10, 0, 0, 1, sectionTheta: theta);
        var mild = ItemsPerSection(Mart(0.5), 200);
        var heavy = ItemsPerSection(Mart(5), 200);
        Assert.True(mild[0] > mild[7] && mild[7] > 0, string.Join(",", mild));
        Assert.True(heavy[0] > 0.9 * 32 * 200, string.Join(",", heavy));
    }

    [Fact]
    public void SectionSkewRefusesKnobsItWouldIgnoreOrCouldNotMeet()
    {
        Assert.Contains("leave --order-sections at --sections", Assert.Throws<Contend.Harness.UsageException>(() => new SmartMart(8, Items, 32, 4, 10, 0, 0, 1, sectionTheta: 1)).Message);
        Assert.Contains("raise --items", Assert.Throws<Contend.Harness.UsageException>(() => new SmartMart(8, 16, 32, 8, 10, 0, 0, 1, sectionTheta: 1)).Message);
    }
}
